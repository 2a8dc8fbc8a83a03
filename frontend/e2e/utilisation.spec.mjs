// Live utilisation on the booking page (issue 15 item 2): the agent's heartbeats, posted here with
// a real heartbeat token, become sparklines; an idle warning offers "Keep", which the server
// records; both languages; axe clean.
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'

import {
  BASE_URL, apiCall, bookNow, djangoValue, listPools, makeReady, personIn, seriousViolations, signIn, useBrowser,
} from './support.mjs'

/** An on-demand booking of alice's in `pool`, made ready here (e2e runs no workers); returns [id, agent token]. */
async function readyBooking(context, pool) {
  const { id } = await bookNow(context, { purpose: 'e2e utilisation', pool })
  return [id, makeReady(id, { ip: '203.0.113.8', heartbeat: true })]
}

async function heartbeat(token, util) {
  const response = await fetch(`${BASE_URL}/api/v1/agent/heartbeat/`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      status: 'alive',
      usage: {
        gpus: [{ index: 0, utilisation_pct: util, vram_used_mib: 40960 + util * 100, vram_total_mib: 196592, power_w: 150 + util * 5 }],
        gpu_processes: util > 0 ? 1 : 0,
        ssh_sessions: util > 0 ? 2 : 0,
      },
    }),
  })
  assert.equal(response.status, 200, await response.text())
}

describe('live utilisation', () => {
  const { browser, cleanup } = useBrowser()
  let pool

  before(async () => {
    // A pool of its own, free now: the specs before this one keep the demo's pools busy now, and
    // this one sets the pool's idle policy.
    const carol = await signIn(browser, 'carol')
    const mi300x = (await listPools(carol.context)).find((p) => p.slug === 'mi300x-tor1')
    const stamp = Date.now()
    const made = await apiCall(carol.context, 'POST', '/api/v1/pools/', {
      name: `MI300X ×1 · ams3 (e2e utilisation ${stamp})`, slug: `e2e-util-${stamp}`,
      instance_type: mi300x.instance_type, region: 'ams3', capacity: 2, max_days_ahead: 60,
    })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    pool = made.body.id
    cleanup.push(() => apiCall(carol.context, 'PATCH', `/api/v1/pools/${pool}/`, { is_active: false }))
  })

  it('the booking page charts the heartbeats and the owner keeps an idle booking', async () => {
    const alice = await signIn(browser, 'alice')
    const [id, token] = await readyBooking(alice.context, pool)
    for (const util of [40, 75, 90, 60, 85]) await heartbeat(token, util)

    const page = alice.page
    await page.goto(`/bookings/${id}`)
    const panel = page.locator('[data-testid=booking-utilisation]')
    await panel.locator('[data-testid=spark-util] polyline').waitFor()
    const points = (await panel.locator('[data-testid=spark-util] polyline').getAttribute('points')).trim().split(/\s+/)
    assert.equal(points.length, 5, 'one point per heartbeat')
    assert.equal((await panel.locator('[data-testid=spark-util] [data-testid=spark-now]').textContent()).trim(), '85 %')
    assert.equal((await panel.locator('[data-testid=utilisation-sessions]').textContent()).trim(), '2')
    assert.match(await panel.locator('[data-testid=utilisation-policy]').textContent(), /Off/)
    assert.deepEqual(await seriousViolations(page), [])

    // The pool's idle policy warned the owner (the sweep's step, done here: e2e runs no beat).
    const poolId = JSON.parse(djangoValue(`
import json
from labgpu.bookings.models import Booking
from labgpu.core.timeutils import now
from labgpu.usage.models import BookingUtilisation
b = Booking.objects.select_related("pool").get(pk=${id})
b.pool.idle_reclaim_minutes = 30
b.pool.idle_grace_minutes = 15
b.pool.save(update_fields=["idle_reclaim_minutes", "idle_grace_minutes"])
BookingUtilisation.objects.filter(booking_id=${id}).update(idle_warned_at=now())
print(json.dumps(b.pool_id))
`))
    cleanup.push(async () =>
      djangoValue(`from labgpu.catalog.models import NodePool; NodePool.objects.filter(pk=${poolId}).update(idle_reclaim_minutes=None)`),
    )
    await page.reload()
    const warning = page.locator('[data-testid=idle-warning]')
    await warning.waitFor()
    assert.match(await warning.textContent(), /idle/)
    assert.deepEqual(await seriousViolations(page), [])
    await page.locator('[data-testid=idle-keep]').click()
    await warning.waitFor({ state: 'detached' })
    const after = (await apiCall(alice.context, 'GET', `/api/v1/bookings/${id}/utilisation/`)).body
    assert.equal(after.idle_warned_at, null)
    assert.ok(after.idle_policy && after.idle_policy.idle_minutes === 30)
    const audited = djangoValue(`from labgpu.audit.models import AuditEvent; print(AuditEvent.objects.filter(action="booking.idle_keep", target_id="${id}").count())`)
    assert.equal(audited, '1')

    // The same page in Chinese.
    const zh = await personIn(browser, 'alice', { lang: 'zh-CN', locale: 'zh-CN' })
    await zh.page.goto(`/bookings/${id}`)
    const zhPanel = zh.page.locator('[data-testid=booking-utilisation]')
    await zhPanel.locator('[data-testid=spark-util] polyline').waitFor()
    assert.match(await zhPanel.locator('h2').textContent(), /GPU 利用率/)
    assert.match(await zhPanel.locator('[data-testid=utilisation-policy]').textContent(), /空闲 30 分钟/)
    assert.deepEqual(await seriousViolations(zh.page), [])
    await zh.context.close()
  })

  it('the usage report shows booked vs used hours and the average utilisation per booking', async () => {
    const alice = await signIn(browser, 'alice')
    // Two metered hours yesterday of which the heartbeats saw one in use at 50 % (what the meter
    // and utilisation_record write; both tested on the server), written straight to the database.
    const id = djangoValue(`
from datetime import timedelta
from labgpu.accounts.models import User
from labgpu.bookings.models import Booking
from labgpu.catalog.models import NodePool
from labgpu.core.timeutils import now
from labgpu.demo.history import _booking, _node, _usage
from labgpu.provisioning.models import Node
from labgpu.usage.models import BookingUtilisation, UsageRecord
UsageRecord.objects.filter(booking__purpose="e2e used hours").delete()
Node.objects.filter(booking__purpose="e2e used hours").delete()
Booking.objects.filter(purpose="e2e used hours").delete()
alice = User.objects.get(username="alice")
pool = NodePool.objects.get(slug="mi325x8-atl1")
start = (now() - timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
end = start + timedelta(hours=2)
booking = _booking(user=alice, pool=pool, start=start, end=end, slot=0, purpose="e2e used hours")
_usage(node=_node(booking=booking, attempt=1, start=start, end=end), start=start, end=end, charged=True)
BookingUtilisation.objects.create(booking=booking, observed_s=7200, active_s=3600, utilisation_s=7200 * 50)
print(booking.pk)
`)
    const page = alice.page
    await page.goto('/usage')
    await page.locator('#usage-group').selectOption('booking')
    // Match the first cell exactly: "#87" is also the text of booking #8's row with 7 GPU-hours.
    const row = page.locator('.totals tbody tr', {
      has: page.locator('td:first-child', { hasText: new RegExp(`^\\s*#${id}\\s*$`) }),
    })
    await row.waitFor()
    const cells = (await row.locator('td').allTextContents()).map((c) => c.trim())
    assert.deepEqual(cells.slice(-3), ['2', '1', '50 %'], cells.join(' | '))
    assert.deepEqual(await seriousViolations(page), [])
  })
})

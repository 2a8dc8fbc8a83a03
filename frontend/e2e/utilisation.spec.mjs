// Live utilisation on the booking page (issue 15 item 2): the agent's heartbeats, posted here with
// a real heartbeat token, become sparklines; an idle warning offers "Keep", which the server
// records; both languages; axe clean.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { BASE_URL, apiCall, django, launch, listPools, me, seriousViolations, signIn } from './support.mjs'

/** An on-demand booking of alice's, made ready here (e2e runs no workers); returns [id, agent token]. */
async function readyBooking(context) {
  const lab = (await me(context)).memberships[0].lab
  // Other specs run nodes now too: take the first open pool with room.
  const pools = (await listPools(context)).filter((p) => !p.requires_approval && p.capacity > 1)
  const end = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000 + 3_600_000)
  let booked
  for (const pool of pools) {
    booked = await apiCall(context, 'POST', '/api/v1/bookings/', {
      pool: pool.id, end: end.toISOString(), purpose: 'e2e utilisation', lab: lab.id,
    })
    if (booked.status !== 409) break
  }
  assert.equal(booked.status, 201, JSON.stringify(booked.body))
  const id = booked.body.id
  const token = django(`
from labgpu.bookings.models import Booking
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.services.sweeps import booking_start
from labgpu.provisioning.tokens import hash_secret, new_heartbeat_token
booking_start(booking_id=${id})
token = new_heartbeat_token()
Node.objects.filter(booking_id=${id}).update(
    status="ready", provider_id="e2e-${id}", public_ip="203.0.113.8", passed_at=now(), ready_at=now(),
    status_changed_at=now(), heartbeat_token_hash=hash_secret(token))
Booking.objects.filter(pk=${id}).update(status="ready", status_changed_at=now())
print(token)
`)
  return [id, lastLine(token)]
}

/** The last line django() printed (the shell may print a banner first). */
const lastLine = (text) => text.split('\n').pop().trim()

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
  let browser
  let poolId
  before(async () => {
    browser = await launch()
  })
  after(async () => {
    if (poolId) django(`from labgpu.catalog.models import NodePool; NodePool.objects.filter(pk=${poolId}).update(idle_reclaim_minutes=None)`)
    await browser?.close()
  })

  it('the booking page charts the heartbeats and the owner keeps an idle booking', async () => {
    const alice = await signIn(browser, 'alice')
    const [id, token] = await readyBooking(alice.context)
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
    poolId = JSON.parse(lastLine(django(`
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
`)))
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
    const audited = django(`from labgpu.audit.models import AuditEvent; print(AuditEvent.objects.filter(action="booking.idle_keep", target_id="${id}").count())`)
    assert.equal(lastLine(audited), '1')

    // The same page in Chinese.
    const zh = await signIn(browser, 'alice', { locale: 'zh-CN' })
    await zh.context.addInitScript(() => localStorage.setItem('labgpu.locale', 'zh-CN'))
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
    const id = lastLine(django(`
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
`))
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

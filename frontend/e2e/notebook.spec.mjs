// Notebooks on the booking page (issue 15 item 3): the booking form asks for JupyterLab; once the
// node is ready and its agent reports the notebook running, the owner sees a one-line SSH tunnel
// and the notebook URL, each with a copy button; the lab admin sees the booking but not these;
// both languages; axe clean.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { BASE_URL, apiCall, django, launch, listPools, me, seriousViolations, signIn } from './support.mjs'

const lastLine = (text) => text.split('\n').pop().trim()

/** An on-demand JupyterLab booking of alice's, made ready here (e2e runs no workers, so this
 * plays the lifecycle and the node's bootstrap); returns [id, heartbeat token]. */
async function readyNotebookBooking(context) {
  const lab = (await me(context)).memberships[0].lab
  const pool = (await listPools(context)).find((p) => !p.requires_approval && p.capacity > 1)
  const end = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000 + 3_600_000)
  const booked = await apiCall(context, 'POST', '/api/v1/bookings/', {
    pool: pool.id, end: end.toISOString(), purpose: 'e2e notebook', lab: lab.id, jupyter: true,
  })
  assert.equal(booked.status, 201, JSON.stringify(booked.body))
  assert.equal(booked.body.jupyter, true)
  const id = booked.body.id
  const token = django(`
from labgpu.bookings.models import Booking
from labgpu.bookings.services import booking_notebook_token
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.services.sweeps import booking_start
from labgpu.provisioning.tokens import hash_secret, new_heartbeat_token
booking_start(booking_id=${id})
token = new_heartbeat_token()
Node.objects.filter(booking_id=${id}).update(
    status="ready", provider_id="e2e-nb-${id}", public_ip="203.0.113.9", passed_at=now(), ready_at=now(),
    status_changed_at=now(), heartbeat_token_hash=hash_secret(token))
Booking.objects.filter(pk=${id}).update(status="ready", status_changed_at=now())
booking_notebook_token(booking=Booking.objects.get(pk=${id}))
print(token)
`)
  return [id, lastLine(token)]
}

async function reportNotebook(token, state) {
  const response = await fetch(`${BASE_URL}/api/v1/agent/notebook/`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ state }),
  })
  assert.equal(response.status, 204, await response.text())
}

describe('notebooks', () => {
  let browser
  before(async () => {
    browser = await launch()
  })
  after(async () => {
    await browser?.close()
  })

  it('the booking form offers JupyterLab', async () => {
    const alice = await signIn(browser, 'alice')
    await alice.page.goto('/bookings/new')
    const box = alice.page.locator('[data-testid=booking-jupyter]')
    await box.waitFor()
    assert.equal(await box.isChecked(), false, 'off by default')
    await box.check()
    assert.equal(await box.isChecked(), true)
  })

  it('the owner gets the tunnel and the notebook URL with copy buttons; the lab admin does not', async () => {
    const alice = await signIn(browser, 'alice')
    const [id, token] = await readyNotebookBooking(alice.context)
    await reportNotebook(token, 'starting')

    const page = alice.page
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'])
    await page.goto(`/bookings/${id}`)
    const panel = page.locator('[data-testid=booking-notebook]')
    await panel.waitFor()
    await panel.locator('[data-testid=notebook-state]', { hasText: 'starting' }).waitFor()

    await reportNotebook(token, 'running')
    await panel.locator('[data-testid=notebook-state]', { hasText: 'running' }).waitFor({ timeout: 15_000 })
    const access = (await apiCall(alice.context, 'GET', `/api/v1/bookings/${id}/notebook/`)).body
    assert.ok(access.url.includes('token='), JSON.stringify(access))
    assert.equal((await panel.locator('[data-testid=notebook-tunnel]').textContent()).trim(), 'ssh -N -L 8888:127.0.0.1:8888 root@203.0.113.9')
    assert.equal((await panel.locator('[data-testid=notebook-url]').textContent()).trim(), access.url)
    await panel.locator('[data-testid=notebook-url-copy]').click()
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), access.url)
    await panel.locator('[data-testid=notebook-tunnel-copy]').click()
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'ssh -N -L 8888:127.0.0.1:8888 root@203.0.113.9')
    // The user's own port for the tunnel.
    await panel.locator('[data-testid=notebook-port]').fill('9000')
    await panel.locator('[data-testid=notebook-tunnel]', { hasText: 'ssh -N -L 9000:127.0.0.1:8888 root@203.0.113.9' }).waitFor()
    assert.match(await panel.locator('[data-testid=notebook-url]').textContent(), /^http:\/\/127\.0\.0\.1:9000\/lab\?token=/)
    assert.deepEqual(await seriousViolations(page), [])

    // The lab's admin sees the booking, not its notebook (and the API refuses it too).
    const bob = await signIn(browser, 'bob')
    const refused = await apiCall(bob.context, 'GET', `/api/v1/bookings/${id}/notebook/`)
    assert.equal(refused.status, 403, JSON.stringify(refused.body))
    assert.equal(refused.body.code, 'not_booking_owner')
    await bob.page.goto(`/bookings/${id}`)
    await bob.page.locator('[data-testid=booking-status]').waitFor()
    assert.equal(await bob.page.locator('[data-testid=booking-notebook]').count(), 0)
    assert.ok(!(await bob.page.content()).includes(access.url.split('token=')[1]))

    // The same panel in Chinese.
    const zh = await signIn(browser, 'alice', { locale: 'zh-CN' })
    await zh.context.addInitScript(() => localStorage.setItem('labgpu.locale', 'zh-CN'))
    await zh.page.goto(`/bookings/${id}`)
    const zhPanel = zh.page.locator('[data-testid=booking-notebook]')
    await zhPanel.locator('[data-testid=notebook-state]', { hasText: '运行中' }).waitFor()
    assert.match(await zhPanel.locator('[data-testid=notebook-tunnel]').textContent(), /ssh -N -L 8888:127\.0\.0\.1:8888/)
    assert.deepEqual(await seriousViolations(zh.page), [])
    await zh.context.close()
    await apiCall(alice.context, 'POST', `/api/v1/bookings/${id}/cancel/`, { reason: 'e2e done' })
  })
})

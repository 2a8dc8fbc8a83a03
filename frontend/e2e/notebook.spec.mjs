// Notebooks on the booking page (issue 15 item 3): the booking form asks for JupyterLab; once the
// node is ready and its agent reports the notebook running, the owner sees a one-line SSH tunnel
// and the notebook URL, each with a copy button; the lab admin sees the booking but not these;
// both languages; axe clean.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import {
  BASE_URL, apiCall, bookNow, cancelBooking, django, makeReady, personIn, seriousViolations, signIn, useBrowser,
} from './support.mjs'

/** An on-demand JupyterLab booking of alice's, made ready here (e2e runs no workers, so this
 * plays the lifecycle and the node's bootstrap); returns [id, heartbeat token]. */
async function readyNotebookBooking(context) {
  const booked = await bookNow(context, { purpose: 'e2e notebook', jupyter: true })
  assert.equal(booked.jupyter, true)
  const token = makeReady(booked.id, { ip: '203.0.113.9', heartbeat: true })
  django(`
from labgpu.bookings.models import Booking
from labgpu.bookings.services import booking_notebook_token
booking_notebook_token(booking=Booking.objects.get(pk=${booked.id}))
`)
  return [booked.id, token]
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
  const { browser } = useBrowser()

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
    const zh = await personIn(browser, 'alice', { lang: 'zh-CN', locale: 'zh-CN' })
    await zh.page.goto(`/bookings/${id}`)
    const zhPanel = zh.page.locator('[data-testid=booking-notebook]')
    await zhPanel.locator('[data-testid=notebook-state]', { hasText: '运行中' }).waitFor()
    assert.match(await zhPanel.locator('[data-testid=notebook-tunnel]').textContent(), /ssh -N -L 8888:127\.0\.0\.1:8888/)
    assert.deepEqual(await seriousViolations(zh.page), [])
    await zh.context.close()
    await cancelBooking(alice.context, id)
  })
})

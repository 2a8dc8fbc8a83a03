// Issue 14 (admin): a blackout's clashes can be moved, not only cancelled. The Move dialog offers
// the pool's next free windows (not only the first); the site admin picks the second one, and the
// API, the audit log and the blackout's clash list say so.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import {
  apiCall, book, bookingNumber, cancelBooking, freeWindow, listPools, me, screenshot, signIn, useBrowser, wallTime,
} from './support.mjs'

describe('moving a booking out of a blackout (issue 14)', () => {
  const { browser, cleanup } = useBrowser()

  it('a site admin moves a clashing booking to one of the free windows offered after the blackout', async () => {
    const alice = await signIn(browser, 'alice')
    const pool = (await listPools(alice.context)).find((p) => !p.requires_approval && p.capacity > 1)
    const window = await freeWindow(alice.context, pool, 120)
    const { id } = await book(alice.context, { pool: pool.id, start: window.start, end: window.end, purpose: 'e2e to be moved' })
    cleanup.push(() => cancelBooking(alice.context, id))
    const reason = `e2e move ${Date.now()}`

    const carol = await signIn(browser, 'carol')
    const carolZone = (await me(carol.context)).timezone
    const page = carol.page
    const blackoutEnd = new Date(Date.parse(window.start) + 3_600_000).toISOString()
    await page.goto('/blackouts')
    await page.selectOption('#blackout-pool', String(pool.id))
    await page.fill('#blackout-start', wallTime(new Date(Date.parse(window.start) - 3_600_000).toISOString(), carolZone))
    await page.fill('#blackout-end', wallTime(blackoutEnd, carolZone))
    await page.fill('#blackout-reason', reason)
    await page.click('[data-testid=blackout-submit]')
    const clash = page.locator(`[data-testid=blackout-clashes] tr[data-booking-id="${id}"]`)
    await clash.waitFor()
    const blackout = (await apiCall(carol.context, 'GET', `/api/v1/blackouts/?pool=${pool.id}&page_size=100`)).body.results
      .find((b) => b.reason === reason)
    assert.ok(blackout, 'the blackout was created')
    cleanup.push(() => apiCall(carol.context, 'DELETE', `/api/v1/blackouts/${blackout.id}/`))

    // What the page should offer: the pool's next free two hours after the blackout.
    const minutes = 120
    const availability = await apiCall(carol.context, 'GET',
      `/api/v1/pools/${pool.id}/availability/?start=${encodeURIComponent(blackout.end)}` +
      `&end=${encodeURIComponent(new Date(Date.parse(blackout.end) + minutes * 60_000).toISOString())}&duration_minutes=${minutes}`)
    assert.equal(availability.status, 200, JSON.stringify(availability.body))
    const windows = availability.body.next_free
    // At least the blackout's end and the end of alice's own booking (plus the lead) open one.
    assert.ok(windows.length >= 2, `several free windows after the blackout: ${JSON.stringify(windows)}`)
    assert.ok(windows.every((w) => Date.parse(w.start) >= Date.parse(blackout.end)))
    const offered = windows[1]

    await clash.locator('[data-testid=blackout-move-booking]').click()
    const dialog = page.locator('[data-app-confirm]')
    await dialog.waitFor()
    assert.match(await dialog.textContent(), bookingNumber(id))
    // One radio per window, in the pool's order, the first picked unless another is chosen.
    const choices = dialog.locator('[data-testid=confirm-choice]')
    assert.equal(await choices.count(), windows.length)
    assert.ok(await choices.nth(0).locator('input').isChecked())
    await choices.nth(1).locator('input').check()
    await screenshot(page, 'move-dialog-windows')
    await dialog.locator('[data-testid=confirm-ok]').click()
    await page.getByText(`Booking #${id} moved.`).waitFor()

    const moved = (await apiCall(alice.context, 'GET', `/api/v1/bookings/${id}/`)).body
    assert.equal(Date.parse(moved.start), Date.parse(offered.start))
    assert.equal(Date.parse(moved.end), Date.parse(offered.end))
    assert.equal(Date.parse(moved.end) - Date.parse(moved.start), Date.parse(window.end) - Date.parse(window.start))
    const audit = (await apiCall(carol.context, 'GET', `/api/v1/audit/?action=booking.move&target_id=${id}`)).body
    assert.equal((audit.results ?? audit).length, 1)
    const clashes = (await apiCall(carol.context, 'GET', `/api/v1/blackouts/${blackout.id}/clashes/`)).body
    assert.ok(!clashes.some((c) => c.id === id), 'the blackout no longer lists it')
    await page.locator(`[data-testid=blackout-clashes] tr[data-booking-id="${id}"]`).waitFor({ state: 'detached' })
  })
})

// Issue 25 item 1: a researcher books a weekly series from the booking form; the booking page
// lists its occurrences, a lab admin approves the whole series once, the calendar marks it, and
// cancel this-and-following cancels the later ones. Checked against the API's rows each time.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { apiCall, freeWindow, listPools, me, openedBookingId, screenshot, seriousViolations, signIn, useBrowser, wallTime } from './support.mjs'

describe('recurring series (issue 25)', () => {
  const { browser, cleanup } = useBrowser()

  it('books a weekly series in the form, approves it once and cancels this and following', async () => {
    const alice = await signIn(browser, 'alice')
    const pool = (await listPools(alice.context)).find((p) => p.requires_approval)
    assert.ok(pool, 'the demo data has a pool that needs approval')
    const { timezone } = await me(alice.context)
    // Soon enough that three weekly occurrences stay inside the pool's booking horizon.
    const window = await freeWindow(alice.context, pool, 60, new Date(Date.now() + 2 * 86_400_000))
    const purpose = `e2e series ${Date.now()}`

    const page = alice.page
    await page.goto(`/bookings/new?pool=${pool.id}`)
    await page.fill('#booking-start', wallTime(window.start, timezone))
    await page.fill('#booking-end', wallTime(window.end, timezone))
    await page.fill('#booking-purpose', purpose)
    await page.selectOption('[data-testid=booking-repeat-frequency]', 'weekly')
    await page.fill('[data-testid=booking-repeat-count]', '3')
    await screenshot(page, 'series-form')
    await page.click('[data-testid=booking-submit]')
    const first = await openedBookingId(page)

    const booking = (await apiCall(alice.context, 'GET', `/api/v1/bookings/${first}/`)).body
    assert.ok(booking.series, 'the booking is an occurrence of a series')
    cleanup.push(() => apiCall(alice.context, 'POST', `/api/v1/series/${booking.series}/cancel/`, { reason: 'e2e' }))
    const series = (await apiCall(alice.context, 'GET', `/api/v1/series/${booking.series}/`)).body
    assert.equal(series.occurrences.length, 3)
    assert.equal(series.frequency, 'weekly')
    assert.equal(series.timezone, timezone)
    // Each occurrence a week apart on alice's clock, at the time she typed.
    const typed = wallTime(window.start, timezone).slice(11)
    assert.deepEqual(series.occurrences.map((o) => wallTime(o.start, timezone).slice(11)), [typed, typed, typed])
    const panel = page.locator('[data-testid=booking-series]')
    // The panel shows before its series has loaded: wait for the rule line, which comes with it.
    await panel.locator('[data-testid=series-rule]').waitFor()
    assert.equal(await panel.locator('[data-testid=series-occurrence]').count(), 3)
    const booked = series.occurrences.filter((o) => o.booking != null)
    assert.ok(booked.length >= 2, JSON.stringify(series.occurrences))
    assert.ok(booked.every((o) => o.status === 'pending'))

    // bob approves the whole series at once from the booking page.
    const bob = await signIn(browser, 'bob')
    await bob.page.goto(`/bookings/${first}`)
    await bob.page.locator('[data-testid=series-approve]').click()
    await bob.page.locator('[data-testid=series-approve]').waitFor({ state: 'detached' })
    const approved = (await apiCall(bob.context, 'GET', `/api/v1/series/${booking.series}/`)).body
    assert.ok(approved.occurrences.filter((o) => o.booking != null).every((o) => o.status === 'scheduled'))
    await bob.context.close()

    // The calendar marks the occurrence as part of a series.
    await page.reload()
    await page.locator('[data-testid=booking-status][data-status=scheduled]').waitFor({ timeout: 20_000 })
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'series-booking-detail')
    await page.click('[data-testid=booking-calendar-link]')
    await page.waitForURL(/\/calendar\/\d+/)
    await page.locator(`[data-testid=calendar] .ev-series[data-booking-id="${first}"]`).first().waitFor()
    await screenshot(page, 'series-calendar')

    // Cancel this and following, from the second occurrence.
    const second = booked[1].booking
    await page.goto(`/bookings/${second}`)
    await page.locator('[data-testid=series-cancel-following]').click()
    await page.locator('[data-app-confirm] [data-testid=confirm-ok]').click()
    await page.locator('[data-testid=booking-status][data-status=cancelled]').waitFor({ timeout: 20_000 })
    const after = (await apiCall(alice.context, 'GET', `/api/v1/series/${booking.series}/`)).body
    const statuses = Object.fromEntries(after.occurrences.filter((o) => o.booking).map((o) => [o.booking, o.status]))
    assert.equal(statuses[first], 'scheduled')
    for (const o of booked.slice(1)) assert.equal(statuses[o.booking], 'cancelled')
  })
})

// The booking journeys of issue 5: book → approve → calendar; a conflict offers the next free
// windows; the booking form works from the keyboard alone.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import {
  apiCall, book, cancelBooking, freeWindow, listPools, me, openedBookingId, screenshot, seriousViolations, signIn, tabTo,
  useBrowser, wallTime,
} from './support.mjs'

describe('booking', () => {
  const { browser, cleanup } = useBrowser()

  it('a researcher books, the lab admin approves, and the booking shows in the calendar', async () => {
    const alice = await signIn(browser, 'alice')
    const pool = (await listPools(alice.context)).find((p) => p.requires_approval)
    assert.ok(pool, 'the demo data has a pool that needs approval')
    const { timezone } = await me(alice.context)
    const window = await freeWindow(alice.context, pool, 120)
    const purpose = `e2e approval ${Date.now()}`

    const page = alice.page
    await page.goto(`/bookings/new?pool=${pool.id}`)
    await page.fill('#booking-start', wallTime(window.start, timezone))
    await page.fill('#booking-end', wallTime(window.end, timezone))
    await page.fill('#booking-purpose', purpose)
    await page.locator('[data-testid=availability] .ok').waitFor()
    await screenshot(page, 'booking-form-filled')
    await page.click('[data-testid=booking-submit]')
    const id = await openedBookingId(page)
    await page.locator('[data-testid=booking-status][data-status=pending]').waitFor()

    const bob = await signIn(browser, 'bob')
    await bob.page.goto('/approvals')
    const row = bob.page.locator(`[data-booking-id="${id}"]`)
    await row.waitFor()
    await row.locator('[data-testid=approve]').click()
    await row.waitFor({ state: 'detached' })
    await bob.context.close()

    // The detail page polls: the approval shows up without a reload.
    await page.locator('[data-testid=booking-status][data-status=scheduled]').waitFor({ timeout: 20_000 })
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'booking-detail')
    await page.click('[data-testid=booking-calendar-link]')
    await page.waitForURL(/\/calendar\/\d+/)
    await page.locator(`[data-testid=calendar] .ev-mine`).first().waitFor()
    await screenshot(page, 'calendar-with-booking')
    cleanup.push(() => cancelBooking(alice.context, id))
  })

  it('a conflict offers the next free windows, and picking one books it', async () => {
    const alice = await signIn(browser, 'alice')
    const pool = (await listPools(alice.context)).find((p) => p.capacity === 1 && !p.requires_approval)
    assert.ok(pool, 'the demo data has a pool of one node')
    const window = await freeWindow(alice.context, pool, 120)
    const blocker = await book(alice.context, { pool: pool.id, start: window.start, end: window.end, purpose: 'e2e blocker' })
    cleanup.push(() => cancelBooking(alice.context, blocker.id))

    const page = alice.page
    const q = new URLSearchParams({ pool: String(pool.id), start: window.start, end: window.end })
    await page.goto(`/bookings/new?${q}`)
    await page.fill('#booking-purpose', 'e2e conflict')
    await page.locator('[data-testid=availability] .bad').waitFor()
    await page.click('[data-testid=booking-submit]')
    await page.locator('[data-testid=form-error]').waitFor()
    const options = page.locator('[data-testid=next-free-option]')
    await options.first().waitFor()
    assert.ok((await options.count()) > 0)
    await screenshot(page, 'booking-conflict')
    await options.first().click()
    await page.click('[data-testid=booking-submit]')
    const id = await openedBookingId(page)
    cleanup.push(() => cancelBooking(alice.context, id))
    await page.locator('[data-testid=booking-status][data-status=scheduled]').waitFor()
  })

  it('dragging across free time in the calendar opens the form prefilled', async () => {
    const alice = await signIn(browser, 'alice')
    const pool = (await listPools(alice.context)).find((p) => !p.requires_approval && p.capacity > 1)
    const day = new Date(Date.now() + 9 * 86_400_000).toISOString().slice(0, 10)
    const page = alice.page
    await page.goto(`/calendar/${pool.id}?date=${day}&view=day&time=08:00`)
    const column = page.locator('[data-testid=calendar] .ec-body .ec-day').last()
    await column.waitFor()
    // The column is taller than the view (it scrolls), so aim just below the visible header.
    const box = await column.boundingBox()
    const header = await page.locator('[data-testid=calendar] .ec-header').boundingBox()
    const x = box.x + box.width / 2
    const top = header.y + header.height + 30
    await page.mouse.move(x, top)
    await page.mouse.down()
    await page.mouse.move(x, top + 60, { steps: 8 })
    await page.mouse.move(x, top + 120, { steps: 8 })
    await page.mouse.up()
    await page.waitForURL(/\/bookings\/new\?/)
    const url = new URL(page.url())
    assert.equal(url.searchParams.get('pool'), String(pool.id))
    const start = new Date(url.searchParams.get('start'))
    const end = new Date(url.searchParams.get('end'))
    assert.ok(end > start)
    const { timezone } = await me(alice.context)
    assert.equal(await page.inputValue('#booking-start'), wallTime(start.toISOString(), timezone))
    assert.equal(await page.inputValue('#booking-end'), wallTime(end.toISOString(), timezone))
  })

  it('the booking form works from the keyboard alone', async () => {
    const alice = await signIn(browser, 'alice')
    const pool = (await listPools(alice.context)).find((p) => !p.requires_approval && p.capacity > 1)
    const window = await freeWindow(alice.context, pool, 60)
    const page = alice.page
    const q = new URLSearchParams({ pool: String(pool.id), start: window.start, end: window.end })
    await page.goto(`/bookings/new?${q}`)
    await page.locator('[data-testid=availability] .ok').waitFor()

    await tabTo(page, '#booking-purpose')
    await page.keyboard.type('typed without a mouse')
    await tabTo(page, '[data-testid=booking-submit]')
    await page.keyboard.press('Enter')
    const id = await openedBookingId(page)
    cleanup.push(() => cancelBooking(alice.context, id))
    const booking = (await apiCall(alice.context, 'GET', `/api/v1/bookings/${id}/`)).body
    assert.equal(booking.purpose, 'typed without a mouse')
    assert.equal(booking.start, window.start.replace('.000Z', 'Z'))
  })
})

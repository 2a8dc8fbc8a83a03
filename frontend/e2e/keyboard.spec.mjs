// Issue 14, keyboard selection of free time on the pool calendar: a researcher who cannot drag
// picks a free time from the "Free times in view" list with Tab and Enter, reaches the booking
// form with it filled in, and books it. The choice is checked against the server: the booking it
// makes, the other lab's booking it must avoid (with the pool's changeover) and the pool's rules.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import {
  apiCall, book, cancelBooking, labNotShared, listPools, me, openedBookingId, screenshot, seriousViolations, signIn,
  useBrowser, wallTime,
} from './support.mjs'

const hhmm = (iso, timeZone) => wallTime(iso, timeZone).slice(11, 16)
const overlaps = (a, b) => Date.parse(a.start) < Date.parse(b.end) && Date.parse(b.start) < Date.parse(a.end)
const minutes = (iso, n) => new Date(Date.parse(iso) + n * 60_000).toISOString()

describe('keyboard selection of free time (issue 14)', () => {
  const { browser, cleanup } = useBrowser()

  it('a free time chosen with Tab and Enter opens the booking form with it, and books it', async () => {
    const alice = await signIn(browser, 'alice')
    const mallory = await signIn(browser, 'mallory')
    const tz = (await me(alice.context)).timezone
    // One node: a booking of another lab makes the morning busy, so the list must step around it.
    const pool = (await listPools(alice.context)).find((p) => !p.requires_approval && p.capacity === 1)
    assert.ok(pool, 'a one-node pool without approval')
    const days = Math.min(12, pool.max_days_ahead - 2)
    const day = wallTime(new Date(Date.now() + (3 + Math.floor(Math.random() * (days - 2))) * 86_400_000).toISOString(), tz).slice(0, 10)

    // Mallory's booking: the first free 3 hours from 09:00 of that day in alice's zone.
    const nine = new Date(Date.parse(`${day}T09:00:00Z`) - (Date.parse(`${wallTime(`${day}T09:00:00Z`, tz)}:00Z`) - Date.parse(`${day}T09:00:00Z`)))
    const q = new URLSearchParams({ start: nine.toISOString(), end: minutes(nine.toISOString(), 24 * 60), duration_minutes: '180' })
    const free = (await apiCall(mallory.context, 'GET', `/api/v1/pools/${pool.id}/availability/?${q}`)).body.next_free?.[0]
    assert.ok(free, 'a free 3 hours for the other lab')
    const theirs = await book(mallory.context, {
      pool: pool.id, lab: await labNotShared(mallory.context, alice.context), start: free.start, end: free.end, purpose: 'keyboard spec other lab',
    })
    cleanup.push(() => cancelBooking(mallory.context, theirs.id))
    await mallory.context.close()

    const { page } = alice
    await page.goto(`/calendar/${pool.id}?view=day&date=${wallTime(theirs.start, tz).slice(0, 10)}`)
    await page.locator('[data-testid=calendar] .ec-event.ev-other').first().waitFor()
    const options = page.locator('[data-testid=calendar-free-option]')
    await options.first().waitFor()
    await screenshot(page, 'keyboard-free-times')
    assert.deepEqual(await seriousViolations(page), [])

    // What the list offers: each option named by its date, times in alice's zone and free nodes,
    // and none meets the other lab's booking with the changeover either side of it.
    const offered = await options.evaluateAll((els) =>
      els.map((el) => ({ start: el.dataset.start, end: el.dataset.end, name: el.textContent.trim() })),
    )
    assert.ok(offered.length >= 2, `options: ${JSON.stringify(offered)}`)
    const held = { start: theirs.reserved_start, end: theirs.reserved_end }
    for (const option of offered) {
      const needs = { start: minutes(option.start, -pool.provisioning_lead_minutes), end: minutes(option.end, pool.teardown_grace_minutes) }
      assert.ok(!overlaps(needs, held), `${JSON.stringify(option)} meets the other lab's ${JSON.stringify(held)}`)
      assert.match(option.name, new RegExp(`${hhmm(option.start, tz)}–${hhmm(option.end, tz)}`))
      assert.match(option.name, /1 of 1 node free/)
    }

    // Keyboard only: Tab to the list, then on to the second option (the first after the other
    // lab's booking when the morning before it is free), and Enter.
    const focused = () => page.evaluate(() => document.activeElement?.dataset?.start ?? null)
    let steps = 0
    while ((await focused()) !== offered[0].start) {
      await page.keyboard.press('Tab')
      assert.ok(++steps < 80, 'Tab never reached the free times')
    }
    const chosen = offered.find((o) => Date.parse(o.start) >= Date.parse(theirs.end)) ?? offered[1]
    while ((await focused()) !== chosen.start) {
      await page.keyboard.press('Tab')
      assert.ok(++steps < 120, 'Tab never reached the chosen free time')
    }
    await page.keyboard.press('Enter')

    await page.waitForURL(/\/bookings\/new\?/)
    await page.locator('[data-testid=availability] .ok').waitFor()
    assert.equal(await page.inputValue('#booking-start'), wallTime(chosen.start, tz))
    assert.equal(await page.inputValue('#booking-end'), wallTime(chosen.end, tz))
    assert.equal(await page.inputValue('#booking-pool'), String(pool.id))
    for (let i = 0; i < 60 && !(await page.evaluate(() => document.activeElement?.matches('[data-testid=booking-submit]'))); i++) {
      await page.keyboard.press('Tab')
    }
    await page.keyboard.press('Enter')
    const id = await openedBookingId(page)
    cleanup.push(() => cancelBooking(alice.context, id))

    // The server holds it, at the time the list offered, and the other lab's booking still stands.
    const booking = (await apiCall(alice.context, 'GET', `/api/v1/bookings/${id}/`)).body
    assert.equal(booking.pool, pool.id)
    assert.equal(Date.parse(booking.start), Date.parse(chosen.start))
    assert.equal(Date.parse(booking.end), Date.parse(chosen.end))
    assert.match(booking.start, /Z$|\+00:00$/)
    const busy = (await apiCall(alice.context, 'GET', `/api/v1/pools/${pool.id}/busy/?${new URLSearchParams({ start: minutes(chosen.start, -1440), end: minutes(chosen.end, 1440) })}`)).body
    const blocks = busy.results ?? busy
    assert.ok(blocks.some((b) => b.booking === id || (b.mine && Date.parse(b.start) === Date.parse(chosen.start))))
    assert.ok(blocks.some((b) => Date.parse(b.start) === Date.parse(theirs.start) && !b.mine))
    await alice.context.close()
  })
})

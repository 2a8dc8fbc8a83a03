// Issue 14 ([spa-daily]), the researcher's items: the week view of the pool calendar (bug 9) and
// the features researchers asked for most ("Start now", quick extend, book again, filters).
// Bookings are made through the API as the people themselves; the page is checked against what
// the server holds (ids, times, the pool's rules), never against a value the SPA computed.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import {
  apiCall, book, bookNow, cancelBooking, freeWindow, labNotShared, lastMailAbout, listPools, makeReady, me, openedBookingId,
  screenshot, seriousViolations, sidewaysOverflow, signIn, useBrowser, wallTime,
} from './support.mjs'

/** Book `window` of `pool` as `context`'s person, in `lab` (default: their first). */
const bookWindow = (context, pool, window, purpose, lab) =>
  book(context, { pool: pool.id, start: window.start, end: window.end, purpose, ...(lab ? { lab } : {}) })

/** A booking of `context`'s person running for two hours on a ready node. */
async function runningBooking(context, purpose) {
  const { id } = await bookNow(context, { purpose })
  makeReady(id, { ip: '203.0.113.9', hoursAgo: 2 })
  return (await apiCall(context, 'GET', `/api/v1/bookings/${id}/`)).body
}

/** The amount in "$3.98" (the page's money format in English). */
const dollars = (text) => Number(text.replace(/[^\d.]/g, ''))

const hhmm = (iso, timeZone) => wallTime(iso, timeZone).slice(11, 16)

describe('researcher items of issue 14', () => {
  const { browser } = useBrowser()

  it('bug 9: the week view shows readable, clickable bookings in the legend’s colours, without contrast errors', async () => {
    const alice = await signIn(browser, 'alice')
    const bob = await signIn(browser, 'bob')
    const mallory = await signIn(browser, 'mallory')
    const pool = (await listPools(alice.context)).find((p) => !p.requires_approval && p.capacity >= 3)
    const tz = (await me(alice.context)).timezone
    // A morning 4–18 days ahead; the three bookings land on the same day or close to it.
    const day = new Date(Date.now() + (4 + Math.floor(Math.random() * 14)) * 86_400_000)
    day.setUTCHours(1, 0, 0, 0)
    const mine = await bookWindow(alice.context, pool, await freeWindow(alice.context, pool, 240, day.toISOString()), 'bug 9 mine')
    const labmate = await bookWindow(bob.context, pool, await freeWindow(bob.context, pool, 240, mine.start), 'bug 9 labmate')
    const otherLab = await labNotShared(mallory.context, alice.context)
    const other = await bookWindow(mallory.context, pool, await freeWindow(mallory.context, pool, 240, mine.start), 'bug 9 other lab', otherLab)
    await bob.context.close()
    await mallory.context.close()

    const { page } = alice
    await page.goto(`/calendar/${pool.id}?view=week&date=${wallTime(mine.start, tz).slice(0, 10)}`)
    const event = (id) => page.locator(`[data-testid=calendar] .ec-event[data-booking-id="${id}"]`)
    await event(mine.id).waitFor()
    await event(labmate.id).waitFor()
    await screenshot(page, 'research-bug9-week')

    // Readable: the visible text holds the start time and is not cut off; the name and tooltip
    // say what, when and on which node.
    for (const booking of [mine, labmate]) {
      const el = event(booking.id)
      const box = await el.boundingBox()
      assert.ok(box.width >= 70, `booking ${booking.id} is ${box.width}px wide`)
      const text = await el.innerText()
      assert.match(text, new RegExp(hhmm(booking.start, tz)), `visible text: ${text}`)
      const clipped = await el.evaluate((node) =>
        [...node.querySelectorAll('*')].some((c) => c.children.length === 0 && c.scrollWidth > c.clientWidth + 1),
      )
      assert.equal(clipped, false, `text of booking ${booking.id} is clipped: ${text}`)
      const name = await el.getAttribute('aria-label')
      const tooltip = await el.getAttribute('title')
      for (const part of [hhmm(booking.start, tz), hhmm(booking.end, tz), /Node \d/]) {
        assert.match(name ?? '', part instanceof RegExp ? part : new RegExp(part), `aria-label: ${name}`)
        assert.match(tooltip ?? '', part instanceof RegExp ? part : new RegExp(part), `title: ${tooltip}`)
      }
    }

    // Colours: mine, labmates and other labs differ, and each matches its legend swatch.
    const colour = (locator) => locator.evaluate((node) => getComputedStyle(node).backgroundColor)
    const otherEvent = page.locator('[data-testid=calendar] .ec-event.ev-other').first()
    await otherEvent.waitFor()
    const seen = { mine: await colour(event(mine.id)), labmate: await colour(event(labmate.id)), other: await colour(otherEvent) }
    const legend = {
      mine: await colour(page.locator('[data-testid=legend-mine] .sw')),
      labmate: await colour(page.locator('[data-testid=legend-labmates] .sw')),
      other: await colour(page.locator('[data-testid=legend-other] .sw')),
    }
    assert.deepEqual(seen, legend)
    assert.equal(new Set(Object.values(seen)).size, 3, `colours: ${JSON.stringify(seen)}`)

    // Another lab's booking is not offered as a button (the user may not open it).
    assert.equal(await otherEvent.getAttribute('role'), null)
    assert.equal(await otherEvent.getAttribute('tabindex'), null)
    void other

    // Every hour label of the week is shown whole: none cut at the left edge (under the node
    // names) and none shortened to an ellipsis.
    const clippedLabels = await page.locator('[data-testid=calendar] .ec-main').evaluate((main) => {
      const frame = main.getBoundingClientRect()
      const sidebar = main.querySelector('.ec-header .ec-sidebar')?.getBoundingClientRect()
      const left = Math.max(frame.left, sidebar?.right ?? frame.left)
      return [...main.querySelectorAll('.ec-header .ec-slot')]
        .filter((slot) => {
          const r = slot.getBoundingClientRect()
          return (r.left < left - 0.5 && r.right > left + 0.5) || slot.scrollWidth > slot.clientWidth + 1
        })
        .map((slot) => slot.textContent)
    })
    assert.deepEqual(clippedLabels, [], 'hour labels cut off')

    assert.deepEqual(await seriousViolations(page), [])

    // A labmate's booking opens (keyboard too), as does mine.
    await event(labmate.id).focus()
    await page.keyboard.press('Enter')
    await page.waitForURL(`**/bookings/${labmate.id}`)
    await page.goBack()
    await event(mine.id).click()
    await page.waitForURL(`**/bookings/${mine.id}`)
    await alice.context.close()
  })

  it('feature 1: Start now books from the server\'s own now and says how long the node takes to come up', async () => {
    const { context, page } = await signIn(browser, 'alice')
    const tz = (await me(context)).timezone
    const pool = (await listPools(context)).find((p) => !p.requires_approval && p.capacity >= 3)
    const step = pool.granularity_minutes * 60_000
    const readyTime = (await apiCall(context, 'GET', '/api/v1/pool-ready-times/')).body.find((r) => r.pool === pool.id)
    await page.goto(`/bookings/new?pool=${pool.id}`)
    await page.locator('#booking-start').waitFor()
    const before = Date.now()
    await page.locator('[data-testid=booking-start-now]').click()
    // The form shows this minute, and an end on the pool's grid at least the 4 default hours on.
    const start = await page.inputValue('#booking-start')
    assert.ok([before, Date.now()].some((t) => wallTime(new Date(t).toISOString(), tz) === start), `start ${start}`)
    const end = await page.inputValue('#booking-end')
    const expectedEnd = (t) => wallTime(new Date(Math.ceil((t + 4 * 3_600_000) / step) * step).toISOString(), tz)
    assert.ok([before, Date.now()].map(expectedEnd).includes(end), `end ${end}`)
    // How long a node of this pool takes: the server's figure, or the general word when it has none.
    // (With one sample the sentence speaks of "the last one", without a count.) The form asks for
    // the figures when it opens: wait for its answer rather than read the placeholder sentence.
    const expected = readyTime?.samples > 1 ? new RegExp(`\\b${readyTime.samples}\\b`)
      : readyTime ? /the last one in this pool took/ : /few minutes/
    const hintLocator = page.locator('[data-testid=booking-ready-hint]')
    await hintLocator.filter({ hasText: expected }).waitFor({ timeout: 15_000 }).catch(() => {})
    const hint = await hintLocator.innerText()
    assert.match(hint, expected, hint)
    await page.fill('#booking-purpose', 'research start now')
    const [request] = await Promise.all([
      page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/api/v1/bookings/')),
      page.locator('[data-testid=booking-submit]').click(),
    ])
    assert.ok(!('start' in request.postDataJSON()), 'an on-demand booking sends no start: the server takes its own now')
    const id = await openedBookingId(page)
    const booked = (await apiCall(context, 'GET', `/api/v1/bookings/${id}/`)).body
    assert.ok(Date.parse(booked.start) >= before - 60_000 && Date.parse(booked.start) <= Date.now(), `booked from ${booked.start}`)
    await cancelBooking(context, id)
    await context.close()
  })

  it('feature 2: a running booking shows time left and cost so far; +1 h shows its cost and room, then extends', async () => {
    const { context, page } = await signIn(browser, 'alice')
    const booking = await runningBooking(context, 'research running')
    await page.goto(`/bookings/${booking.id}`)
    const panel = page.locator('[data-testid=booking-running]')
    await panel.waitFor()
    const left = Number((await panel.locator('[data-testid=booking-time-left]').textContent()).match(/\d+/)[0])
    const expectedLeft = (Date.parse(booking.end) - Date.now()) / 60_000
    assert.ok(Math.abs(left - expectedLeft) <= 2, `time left ${left} min, the server's end is ${expectedLeft} min away`)
    const soFar = dollars(await panel.locator('[data-testid=booking-cost-so-far]').textContent())
    const expectedSoFar = ((Date.now() - Date.parse(booking.start)) / 3_600_000) * Number(booking.price_per_hour)
    assert.ok(Math.abs(soFar - expectedSoFar) <= 0.05, `cost so far ${soFar}, expected about ${expectedSoFar}`)

    await panel.locator('[data-testid=extend-quick-1]').click()
    const confirm = panel.locator('[data-testid=extend-quick-confirm]')
    assert.equal(dollars(await confirm.locator('[data-testid=extend-quick-cost]').textContent()), Number(booking.price_per_hour))
    await confirm.locator('[data-testid=extend-quick-availability] .ok').waitFor()
    assert.deepEqual(await seriousViolations(page), [])
    // The server's answer, so that a refusal fails with its reason rather than a timeout.
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/bookings/${booking.id}/extend/`)),
      confirm.locator('[data-testid=extend-quick-ok]').click(),
    ])
    assert.equal(answer.status(), 200, `the extension was refused: ${await answer.text()}`)
    await confirm.waitFor({ state: 'detached' })
    const extended = (await apiCall(context, 'GET', `/api/v1/bookings/${booking.id}/`)).body
    assert.equal(Date.parse(extended.end), Date.parse(booking.end) + 3_600_000)
    await cancelBooking(context, booking.id)
    await context.close()
  })

  it('feature 3: Book again opens the form with the earlier booking’s pool, length and purpose', async () => {
    const { context, page } = await signIn(browser, 'alice')
    const pool = (await listPools(context)).find((p) => !p.requires_approval && p.capacity >= 3)
    const window = await freeWindow(context, pool, 180, new Date(Date.now() + 3 * 86_400_000).toISOString())
    const earlier = await bookWindow(context, pool, window, `research again ${Date.now()}`)
    await cancelBooking(context, earlier.id)

    await page.goto(`/bookings/${earlier.id}`)
    await page.locator('[data-testid=booking-again]').click()
    await page.waitForURL(/\/bookings\/new/)
    await page.locator('#booking-start').waitFor()
    assert.equal(Number(await page.inputValue('#booking-pool')), pool.id)
    assert.equal(await page.inputValue('#booking-purpose'), earlier.purpose)
    // The form’s default start, the earlier booking’s length.
    await page.locator('[data-testid=booking-submit]').click()
    const id = await openedBookingId(page)
    assert.notEqual(id, earlier.id)
    const again = (await apiCall(context, 'GET', `/api/v1/bookings/${id}/`)).body
    assert.equal(again.pool, pool.id)
    assert.equal(again.purpose, earlier.purpose)
    assert.equal(Date.parse(again.end) - Date.parse(again.start), Date.parse(earlier.end) - Date.parse(earlier.start))
    await cancelBooking(context, id)
    await context.close()
  })

  it('feature 4: My bookings filters by status, pool and days, kept in the URL across a reload (and fits 390 px)', async () => {
    const { context, page } = await signIn(browser, 'alice')
    const tz = (await me(context)).timezone
    const pools = (await listPools(context)).filter((p) => !p.requires_approval)
    const [poolA, poolB] = [pools.find((p) => p.capacity >= 3), pools.find((p) => p.capacity < 3)]
    const from = new Date(Date.now() + (25 + Math.floor(Math.random() * 10)) * 86_400_000).toISOString()
    const wanted = await bookWindow(context, poolA, await freeWindow(context, poolA, 120, from), 'research filter wanted')
    const otherPool = await bookWindow(context, poolB, await freeWindow(context, poolB, 120, wanted.start), 'research filter other pool')
    const otherDay = await bookWindow(context, poolA, await freeWindow(context, poolA, 120, new Date(Date.parse(wanted.start) + 3 * 86_400_000).toISOString()), 'research filter other day')
    const day = wallTime(wanted.start, tz).slice(0, 10)
    assert.notEqual(wallTime(otherDay.start, tz).slice(0, 10), day)

    await page.setViewportSize({ width: 390, height: 844 })
    await page.goto('/bookings')
    await page.locator('[data-testid=booking-filters]').waitFor()
    await page.selectOption('#status-filter', 'scheduled')
    await page.selectOption('#pool-filter', String(poolA.id))
    await page.fill('#from-filter', day)
    await page.fill('#to-filter', day)
    await page.waitForURL((url) => url.searchParams.get('to') === day)
    const url = new URL(page.url())
    assert.deepEqual(
      ['status', 'pool', 'from', 'to'].map((k) => url.searchParams.get(k)),
      ['scheduled', String(poolA.id), day, day],
    )
    const shown = async () => {
      await page.locator(`[data-booking-id="${wanted.id}"]`).waitFor()
      await page.waitForLoadState('networkidle')
      return page.locator('[data-testid=booking-table] tbody tr').evaluateAll((rows) => rows.map((r) => Number(r.dataset.bookingId)))
    }
    for (const pass of ['filtered', 'after reload']) {
      const ids = await shown()
      assert.ok(ids.includes(wanted.id), `${pass}: ${ids}`)
      assert.ok(!ids.includes(otherPool.id), `${pass}: another pool's booking is listed`)
      assert.ok(!ids.includes(otherDay.id), `${pass}: another day's booking is listed`)
      assert.equal(await page.inputValue('#pool-filter'), String(poolA.id))
      assert.equal(await page.inputValue('#from-filter'), day)
      assert.equal(await page.inputValue('#status-filter'), 'scheduled')
      const sideways = await sidewaysOverflow(page)
      assert.ok(sideways.px <= 0, `${pass}: the page scrolls ${sideways.px}px sideways at 390 px (${sideways.culprits.join(', ')})`)
      await page.reload()
    }
    for (const b of [wanted, otherPool, otherDay]) await cancelBooking(context, b.id)
    await context.close()
  })

  it('feature 5: what alice was e-mailed (an approval) is in her notification list, unread until she reads it', async () => {
    const { context, page } = await signIn(browser, 'alice')
    const profile = await me(context)
    const pool = (await listPools(context)).find((p) => p.requires_approval)
    const window = await freeWindow(context, pool, 120, new Date(Date.now() + (40 + Math.floor(Math.random() * 10)) * 86_400_000).toISOString())
    const booking = await bookWindow(context, pool, window, 'research notification')
    const bob = await signIn(browser, 'bob')
    const approved = await apiCall(bob.context, 'POST', `/api/v1/bookings/${booking.id}/approve/`, { reason: 'ok' })
    assert.equal(approved.status, 200, JSON.stringify(approved.body))
    await bob.context.close()
    // The e-mail the server sent (read from the mail files) is the independent record.
    const message = lastMailAbout(profile.email, booking.id)
    assert.ok(message, 'alice was e-mailed about the approval')

    await page.goto('/')
    const badge = page.locator('[data-testid=notifications-unread]')
    await badge.waitFor()
    const unreadBefore = Number(await badge.textContent())
    assert.ok(unreadBefore >= 1)
    await page.locator('[data-testid=notifications-link]').click()
    // This booking's notification by its link (exact id), of the kind the mail was.
    const item = page.locator('[data-testid=notification-list] li', {
      has: page.locator(`a[href="/bookings/${booking.id}"]`), hasText: message.subject,
    }).first()
    await item.waitFor()
    await item.locator('[data-testid=notification-unread]').waitFor()
    assert.deepEqual(await seriousViolations(page), [])
    await item.locator('[data-testid=notification-read]').click()
    await item.locator('[data-testid=notification-unread]').waitFor({ state: 'detached' })
    const id = Number(await item.getAttribute('data-notification-id'))
    const mine = (await apiCall(context, 'GET', '/api/v1/notifications/?page_size=100')).body.results
    assert.ok(mine.find((n) => n.id === id).read_at, 'the server recorded it as read')
    const unreadAfter = (await apiCall(context, 'GET', '/api/v1/notifications/?unread=true')).body.count
    assert.equal(unreadAfter, unreadBefore - 1)
    await cancelBooking(context, booking.id)
    await context.close()
  })
})

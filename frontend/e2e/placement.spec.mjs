// Issue 25 item 3: a researcher asks for "any MI300X, earliest" between two times and is booked
// in a pool of that model; asked again where nothing fits, she sees the alternatives and books
// one. Checked against the API's rows each time.
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'

import { apiCall, cancelBooking, listPools, me, openedBookingId, randomMorning, screenshot, seriousViolations, signIn, useBrowser, wallTime } from './support.mjs'

const REGION = 'ams3'

describe('flexible placement (issue 25)', () => {
  const { browser, cleanup } = useBrowser()
  let carol
  let extra

  before(async () => {
    // A second MI300X ×1 pool, one node, in a region of its own: the demo has one per model.
    carol = await signIn(browser, 'carol')
    const mi300x = (await listPools(carol.context)).find((p) => p.slug === 'mi300x-tor1')
    assert.ok(mi300x, 'the demo has the MI300X pool in tor1')
    const made = await apiCall(carol.context, 'POST', '/api/v1/pools/', {
      name: `MI300X ×1 · ${REGION} (e2e ${Date.now()})`, slug: `e2e-mi300x-${REGION}-${Date.now()}`,
      instance_type: mi300x.instance_type, region: REGION, capacity: 1, max_days_ahead: 60,
    })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    extra = made.body
    // Closed again at the end (after the bookings are cancelled: those are put before it), so
    // the other specs' pool lists are as the demo makes them.
    cleanup.push(() => apiCall(carol.context, 'PATCH', `/api/v1/pools/${extra.id}/`, { is_active: false }))
  })

  it('books the earliest MI300X in the asked region, then offers alternatives when nothing fits', async () => {
    const alice = await signIn(browser, 'alice')
    const { timezone } = await me(alice.context)
    const start = randomMorning(timezone)
    const end = new Date(start.getTime() + 2 * 3600_000)
    const page = alice.page

    await page.goto('/bookings/new')
    await page.click('[data-testid=placement-link]')
    await page.waitForURL(/\/bookings\/place$/)
    await page.selectOption('[data-testid=placement-model]', 'MI300X')
    await page.fill('[data-testid=placement-hours]', '2')
    await page.fill('#placement-after', wallTime(start.toISOString(), timezone))
    await page.fill('#placement-before', wallTime(end.toISOString(), timezone))
    await page.check(`[data-testid=placement-region-${REGION}]`)
    const offered = page.locator(`[data-testid=placement-window][data-pool="${extra.id}"]`)
    await offered.waitFor()
    // Only the asked region once the ticked box's answer is in (the form asks as it is filled).
    await page.locator(`[data-testid=placement-window]:not([data-pool="${extra.id}"])`).first().waitFor({ state: 'detached' })
    assert.equal(await page.locator('[data-testid=placement-window]').count(), 1, 'only the asked region')
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'placement-form')
    await page.click('[data-testid=placement-submit]')
    const first = await openedBookingId(page)
    cleanup.unshift(() => cancelBooking(alice.context, first))

    const booked = (await apiCall(alice.context, 'GET', `/api/v1/bookings/${first}/`)).body
    assert.equal(booked.pool, extra.id)
    assert.equal(Date.parse(booked.start), start.getTime())
    assert.equal(Date.parse(booked.end), end.getTime())

    // The same ask again: the one node of ams3 is taken then, so nothing fits; the answer lists
    // the alternatives (another region in time, or ams3 later) and one of them is booked.
    await page.goBack()
    await page.waitForURL(/\/bookings\/place$/)
    await page.selectOption('[data-testid=placement-model]', 'MI300X')
    await page.fill('[data-testid=placement-hours]', '2')
    await page.fill('#placement-after', wallTime(start.toISOString(), timezone))
    await page.fill('#placement-before', wallTime(end.toISOString(), timezone))
    await page.check(`[data-testid=placement-region-${REGION}]`)
    await page.locator('[data-testid=placement-none]').waitFor()
    await page.click('[data-testid=placement-submit]')
    await page.locator('[data-testid=placement-error]').waitFor()
    const alternatives = page.locator('[data-testid=placement-alternative]')
    await alternatives.first().waitFor()
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'placement-alternatives')
    const choice = alternatives.first()
    const pool = Number(await choice.getAttribute('data-pool'))
    const altStart = await choice.getAttribute('data-start')
    assert.ok(pool !== extra.id || Date.parse(altStart) >= end.getTime(), 'not the taken window')
    await choice.locator('[data-testid=placement-alternative-book]').click()
    const second = await openedBookingId(page)
    cleanup.unshift(() => cancelBooking(alice.context, second))
    const other = (await apiCall(alice.context, 'GET', `/api/v1/bookings/${second}/`)).body
    assert.equal(other.pool, pool)
    assert.equal(Date.parse(other.start), Date.parse(altStart))
    const mine = (await apiCall(alice.context, 'GET', `/api/v1/bookings/?pool=${extra.id}&mine=true`)).body.results
    assert.deepEqual(mine.filter((b) => b.status !== 'cancelled').map((b) => b.id).sort(), pool === extra.id ? [first, second].sort() : [first])
  })
})

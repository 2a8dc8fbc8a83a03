// The booking journeys of issue 5: book → approve → calendar; a conflict offers the next free
// windows; the booking form works from the keyboard alone.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { apiCall, freeWindow, launch, listPools, me, screenshot, signIn, wallTime } from './support.mjs'

describe('booking', () => {
  let browser
  const cleanup = []
  before(async () => {
    browser = await launch()
  })
  after(async () => {
    for (const fn of cleanup) await fn().catch(() => {})
    await browser?.close()
  })

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
    await page.waitForURL(/\/bookings\/\d+$/)
    const id = Number(new URL(page.url()).pathname.split('/').pop())
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
    await screenshot(page, 'booking-detail')
    await page.click('[data-testid=booking-calendar-link]')
    await page.waitForURL(/\/calendar\/\d+/)
    await page.locator(`[data-testid=calendar] .ev-mine`).first().waitFor()
    await screenshot(page, 'calendar-with-booking')
    cleanup.push(() => apiCall(alice.context, 'POST', `/api/v1/bookings/${id}/cancel/`, { reason: 'e2e' }))
  })

  it('a conflict offers the next free windows, and picking one books it', async () => {
    const alice = await signIn(browser, 'alice')
    const pool = (await listPools(alice.context)).find((p) => p.capacity === 1 && !p.requires_approval)
    assert.ok(pool, 'the demo data has a pool of one node')
    const window = await freeWindow(alice.context, pool, 120)
    const blocker = await apiCall(alice.context, 'POST', '/api/v1/bookings/', {
      pool: pool.id, start: window.start, end: window.end, purpose: 'e2e blocker',
    })
    assert.equal(blocker.status, 201, JSON.stringify(blocker.body))
    cleanup.push(() => apiCall(alice.context, 'POST', `/api/v1/bookings/${blocker.body.id}/cancel/`, { reason: 'e2e' }))

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
    await page.waitForURL(/\/bookings\/\d+$/)
    const id = Number(new URL(page.url()).pathname.split('/').pop())
    cleanup.push(() => apiCall(alice.context, 'POST', `/api/v1/bookings/${id}/cancel/`, { reason: 'e2e' }))
    await page.locator('[data-testid=booking-status][data-status=scheduled]').waitFor()
  })

  it('the booking form works from the keyboard alone', async () => {
    const alice = await signIn(browser, 'alice')
    const pool = (await listPools(alice.context)).find((p) => !p.requires_approval && p.capacity > 1)
    const window = await freeWindow(alice.context, pool, 60)
    const page = alice.page
    const q = new URLSearchParams({ pool: String(pool.id), start: window.start, end: window.end })
    await page.goto(`/bookings/new?${q}`)
    await page.locator('[data-testid=availability] .ok').waitFor()

    async function tabTo(selector) {
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press('Tab')
        if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return
      }
      throw new Error(`Tab never reached ${selector}`)
    }
    await tabTo('#booking-purpose')
    await page.keyboard.type('typed without a mouse')
    await tabTo('[data-testid=booking-submit]')
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/bookings\/\d+$/)
    const id = Number(new URL(page.url()).pathname.split('/').pop())
    cleanup.push(() => apiCall(alice.context, 'POST', `/api/v1/bookings/${id}/cancel/`, { reason: 'e2e' }))
    const booking = (await apiCall(alice.context, 'GET', `/api/v1/bookings/${id}/`)).body
    assert.equal(booking.purpose, 'typed without a mouse')
    assert.equal(booking.start, window.start.replace('.000Z', 'Z'))
  })
})

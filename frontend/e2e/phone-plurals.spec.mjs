// Issue 14, two small SPA bugs: the blackout page counted "1 bookings overlap", and the dashboard's
// upcoming table hid its status column beyond the card's edge on a 390×844 phone. Bookings and
// blackouts are made through the API as the people themselves; the page is checked against them.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { BASE_URL, apiCall, launch, listPools, me, screenshot, signIn } from './support.mjs'

const PHONE = { width: 390, height: 844 }

/** A signed-in context for `username` at `viewport`, its pages in `locale` ('en' or 'zh-CN'). */
async function personIn(browser, username, { viewport = { width: 1280, height: 900 }, locale = 'en' } = {}) {
  const signedIn = await signIn(browser, username)
  const storageState = await signedIn.context.storageState()
  await signedIn.context.close()
  const context = await browser.newContext({ baseURL: BASE_URL, viewport, storageState })
  await context.addInitScript((l) => localStorage.setItem('labgpu.locale', l), locale)
  return context
}

/** A random whole hour 2–20 days ahead. */
function randomHour() {
  const from = new Date(Date.now() + (2 + Math.random() * 18) * 86_400_000)
  from.setUTCMinutes(0, 0, 0)
  return from
}

/**
 * `count` bookings of `context`'s person in one slot where the pool has no other live booking for
 * an hour either side (so a blackout over the slot overlaps exactly these), in the first open pool
 * with room; the person's first lab is named (other specs may add them to more labs).
 */
async function bookAlone(context, count, purpose) {
  const lab = (await me(context)).memberships[0].lab.id
  const pools = (await listPools(context)).filter((p) => !p.requires_approval && p.capacity >= count)
  for (let attempt = 0; attempt < 20; attempt++) {
    for (const pool of pools) {
      const minutes = Math.max(pool.min_duration_minutes, 60)
      const start = randomHour()
      const end = new Date(start.getTime() + minutes * 60_000)
      const q = new URLSearchParams({
        start: new Date(start.getTime() - 3_600_000).toISOString(),
        end: new Date(end.getTime() + 3_600_000).toISOString(),
      })
      const busy = await apiCall(context, 'GET', `/api/v1/pools/${pool.id}/busy/?${q}`)
      if (busy.status !== 200 || busy.body.length) continue
      const made = []
      for (let i = 0; i < count; i++) {
        const r = await apiCall(context, 'POST', '/api/v1/bookings/', {
          pool: pool.id, lab, start: start.toISOString(), end: end.toISOString(), purpose,
        })
        if (r.status === 201) made.push(r.body)
      }
      if (made.length === count) return { pool, start, end, bookings: made }
      for (const b of made) await apiCall(context, 'POST', `/api/v1/bookings/${b.id}/cancel/`, { reason: 'e2e' })
    }
  }
  throw new Error(`no empty slot for ${count} bookings`)
}

describe('small SPA bugs (issue 14)', () => {
  let browser, alice, carol
  const cleanup = []
  before(async () => {
    browser = await launch()
    // Their API sessions make and remove the data; each page is looked at in a context of its own.
    alice = await signIn(browser, 'alice')
    carol = await signIn(browser, 'carol')
  })
  after(async () => {
    for (const fn of cleanup.reverse()) await fn().catch(() => {})
    await browser?.close()
  })

  it('the blackout page counts overlapping bookings with plurals, in English and Chinese', async () => {
    // One maintenance window over one booking, another over two.
    const blackouts = []
    for (const count of [1, 2]) {
      const slot = await bookAlone(alice.context, count, `e2e plural ${count}`)
      for (const b of slot.bookings) cleanup.push(() => apiCall(alice.context, 'POST', `/api/v1/bookings/${b.id}/cancel/`, { reason: 'e2e' }))
      const created = await apiCall(carol.context, 'POST', '/api/v1/blackouts/', {
        pool: slot.pool.id, start: slot.start.toISOString(), end: slot.end.toISOString(), reason: `e2e plural ${count} ${Date.now()}`,
      })
      assert.equal(created.status, 201, JSON.stringify(created.body))
      cleanup.push(() => apiCall(carol.context, 'DELETE', `/api/v1/blackouts/${created.body.id}/`))
      assert.deepEqual(created.body.clashes.map((c) => c.id).sort(), slot.bookings.map((b) => b.id).sort())
      blackouts.push({ id: created.body.id, count })
    }

    const expected = {
      en: {
        1: '1 booking overlaps this window; its owner was emailed. Move or cancel it if it cannot go ahead.',
        2: '2 bookings overlap this window; their owners were emailed. Move or cancel those that cannot go ahead.',
      },
      'zh-CN': {
        1: '有 1 个预约与此时段重叠，已通过邮件通知其所有者。请改期或取消无法继续的预约。',
        2: '有 2 个预约与此时段重叠，已通过邮件通知其所有者。请改期或取消无法继续的预约。',
      },
    }
    for (const locale of ['en', 'zh-CN']) {
      const context = await personIn(browser, 'carol', { locale })
      const page = await context.newPage()
      await page.goto('/blackouts')
      for (const { id, count } of blackouts) {
        const row = page.locator(`[data-blackout-id="${id}"]`)
        await row.locator('[data-testid=blackout-show-clashes]').click()
        const note = row.locator('[data-testid=blackout-clash-note]')
        await note.waitFor()
        assert.equal((await note.textContent()).trim(), expected[locale][count], `${locale}, ${count} overlapping`)
      }
      await context.close()
    }
  })

  for (const locale of ['en', 'zh-CN']) {
    it(`the dashboard's upcoming table shows every booking's status whole at 390×844 (${locale})`, async () => {
      const { bookings: [booking] } = await bookAlone(alice.context, 1, 'e2e phone: a purpose long enough to need a second line on a phone')
      cleanup.push(() => apiCall(alice.context, 'POST', `/api/v1/bookings/${booking.id}/cancel/`, { reason: 'e2e' }))
      const context = await personIn(browser, 'alice', { viewport: PHONE, locale })
      const page = await context.newPage()
      await page.goto('/')
      const row = page.locator(`[data-testid=upcoming-bookings] [data-booking-id="${booking.id}"]`)
      await row.waitFor()
      const seen = await row.evaluate((tr) => {
        const card = tr.closest('[data-testid=upcoming-bookings]')
        const badge = tr.querySelector('[data-status]').getBoundingClientRect()
        const box = card.getBoundingClientRect()
        return {
          status: tr.querySelector('[data-status]').dataset.status,
          badge: { left: badge.left, right: badge.right },
          card: { left: box.left, right: box.right },
          cardScrolls: card.scrollWidth - card.clientWidth,
          pageScrolls: document.documentElement.scrollWidth - window.innerWidth,
        }
      })
      assert.equal(seen.status, booking.status)
      assert.ok(seen.badge.left >= seen.card.left && seen.badge.right <= seen.card.right,
        `the status badge (${seen.badge.left}–${seen.badge.right} px) lies inside its card (${seen.card.left}–${seen.card.right} px)`)
      assert.ok(seen.badge.right <= PHONE.width, `the status badge ends at ${seen.badge.right} px, past the screen`)
      assert.ok(seen.cardScrolls <= 0, `the card scrolls ${seen.cardScrolls} px sideways`)
      assert.ok(seen.pageScrolls <= 0, `the page scrolls ${seen.pageScrolls} px sideways`)
      await screenshot(page, `dashboard-phone-${locale}`)
      await context.close()
    })
  }
})

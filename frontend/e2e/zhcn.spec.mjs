// zh-CN and daily-use items of issue 14 ([spa-daily]): week start, the time-zone picker, approval
// as a badge (never in a pool's name), one word for "ready", and the approval queue. Each test
// checks what the server holds or what the page shows, against Intl or the API, never a value the
// SPA computed about itself.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { BASE_URL, apiCall, django, freeWindow, launch, listPools, screenshot, signIn } from './support.mjs'

/** A signed-in context for `username`, its pages in `locale` ('en' or 'zh-CN'). */
async function personIn(browser, username, locale = 'en') {
  const signedIn = await signIn(browser, username)
  const storageState = await signedIn.context.storageState()
  await signedIn.context.close()
  const context = await browser.newContext({ baseURL: BASE_URL, viewport: { width: 1280, height: 900 }, storageState })
  await context.addInitScript((l) => localStorage.setItem('labgpu.locale', l), locale)
  const page = await context.newPage()
  page.on('pageerror', (e) => console.error(`[${username}] page error:`, e.message))
  return { context, page }
}

/** The short weekday name of `date` in `locale`, as Intl spells it. */
const weekday = (locale, date) => new Intl.DateTimeFormat(locale, { weekday: 'short', timeZone: 'UTC' }).format(date)

describe('zh-CN and daily use (issue 14, zhcn)', () => {
  let browser
  before(async () => {
    browser = await launch()
  })
  after(async () => {
    await browser?.close()
  })

  for (const [locale, firstDay] of [['zh-CN', 'Monday'], ['en', 'Sunday']]) {
    it(`item 1: the calendar's weeks start on ${firstDay} in ${locale}`, async () => {
      const { context, page } = await personIn(browser, 'alice', locale)
      // 2026-12-02 is a Wednesday: the month grid's first column is the locale's first weekday.
      await page.goto('/calendar?date=2026-12-02&view=month')
      const header = page.locator('[data-testid=calendar] .ec-month-view .ec-col-head').first()
      await header.waitFor()
      const monday = new Date(Date.UTC(2026, 10, 30))
      const sunday = new Date(Date.UTC(2026, 10, 29))
      assert.equal((await header.textContent()).trim(), weekday(locale, firstDay === 'Monday' ? monday : sunday))
      assert.match(await header.getAttribute('class'), firstDay === 'Monday' ? /\bec-mon\b/ : /\bec-sun\b/)
      await context.close()
    })
  }

  it('item 3: pool names are plain; the approval rule is a translated badge in the form, the calendar and the lists', async () => {
    const pools = await listPools((await signIn(browser, 'alice')).context)
    assert.deepEqual(pools.filter((p) => /approval|审批/i.test(p.name)).map((p) => p.name), [], 'pool names carry no approval text')
    const pool = pools.find((p) => p.requires_approval)
    assert.ok(pool, 'the demo data has a pool that needs approval')
    for (const [locale, badge] of [['en', 'needs approval'], ['zh-CN', '需审批']]) {
      const { context, page } = await personIn(browser, 'alice', locale)
      await page.goto(`/bookings/new?pool=${pool.id}`)
      await page.locator('#booking-pool').waitFor()
      await page.selectOption('#booking-pool', String(pool.id))
      assert.equal((await page.locator('[data-testid=booking-form] [data-testid=pool-approval-badge]').textContent()).trim(), badge)
      const option = (await page.locator(`#booking-pool option[value="${pool.id}"]`).textContent()).trim()
      assert.ok(option.startsWith(pool.name) && option.includes(badge), `the option reads "${option}"`)
      const plain = pools.find((p) => !p.requires_approval)
      await page.selectOption('#booking-pool', String(plain.id))
      assert.equal(await page.locator('[data-testid=booking-form] [data-testid=pool-approval-badge]').count(), 0)
      assert.equal((await page.locator(`#booking-pool option[value="${plain.id}"]`).textContent()).trim(), plain.name)

      await page.goto(`/calendar/${pool.id}`)
      assert.equal((await page.locator('main [data-testid=pool-approval-badge]').first().textContent()).trim(), badge)
      if (locale === 'zh-CN') await screenshot(page, 'calendar-approval-badge-zh-CN')
      await context.close()
    }
  })

  it('item 4: zh-CN says 就绪 for a ready booking, as it does for a ready node', async () => {
    const { context } = await signIn(browser, 'alice')
    const pool = (await listPools(context)).find((p) => !p.requires_approval && p.capacity > 1)
    const window = await freeWindow(context, pool, 120)
    const created = await apiCall(context, 'POST', '/api/v1/bookings/', { pool: pool.id, start: window.start, end: window.end, purpose: 'e2e ready term' })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    // No workers run in the browser suite: put the booking into its ready state directly.
    django(`from labgpu.bookings.models import Booking; Booking.objects.filter(pk=${created.body.id}).update(status="ready")`)
    const { context: zh, page } = await personIn(browser, 'alice', 'zh-CN')
    await page.goto(`/bookings/${created.body.id}`)
    const badge = page.locator('main .badge[data-status=ready]').first()
    await badge.waitFor()
    assert.equal((await badge.textContent()).trim(), '就绪')
    await page.goto('/bookings')
    assert.equal((await page.locator('#status-filter option[value=ready]').textContent()).trim(), '就绪')
    await zh.close()
  })
})

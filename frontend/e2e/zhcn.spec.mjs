// zh-CN and daily-use items of issue 14 ([spa-daily]): week start, the time-zone picker, approval
// as a badge (never in a pool's name), one word for "ready", and the approval queue. Each test
// checks what the server holds or what the page shows, against Intl or the API, never a value the
// SPA computed about itself.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'

import {
  apiCall, book, cancelBooking, django, freeWindow, listPools, me, personIn, screenshot, seriousViolations, signIn, useBrowser,
} from './support.mjs'

const messages = {
  en: JSON.parse(readFileSync(new URL('../src/i18n/en.json', import.meta.url), 'utf8')),
  'zh-CN': JSON.parse(readFileSync(new URL('../src/i18n/zh-CN.json', import.meta.url), 'utf8')),
}

/** The short weekday name of `date` in `locale`, as Intl spells it. */
const weekday = (locale, date) => new Intl.DateTimeFormat(locale, { weekday: 'short', timeZone: 'UTC' }).format(date)

describe('zh-CN and daily use (issue 14, zhcn)', () => {
  const { browser } = useBrowser()

  for (const [locale, firstDay] of [['zh-CN', 'Monday'], ['en', 'Sunday']]) {
    it(`item 1: the calendar's weeks start on ${firstDay} in ${locale}`, async () => {
      const { context, page } = await personIn(browser, 'alice', { lang: locale })
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
      const { context, page } = await personIn(browser, 'alice', { lang: locale })
      await page.goto(`/bookings/new?pool=${pool.id}`)
      await page.locator('#booking-pool').waitFor()
      await page.selectOption('#booking-pool', String(pool.id))
      // The form says it once, in the pool's option (issue 24 item 12: not beside it again).
      assert.equal(await page.locator('[data-testid=booking-form] [data-testid=pool-approval-badge]').count(), 0)
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
    const created = await book(context, { pool: pool.id, start: window.start, end: window.end, purpose: 'e2e ready term' })
    // No workers run in the browser suite: put the booking into its ready state directly.
    django(`from labgpu.bookings.models import Booking; Booking.objects.filter(pk=${created.id}).update(status="ready")`)
    const { context: zh, page } = await personIn(browser, 'alice', { lang: 'zh-CN' })
    await page.goto(`/bookings/${created.id}`)
    const badge = page.locator('main .badge[data-status=ready]').first()
    await badge.waitFor()
    assert.equal((await badge.textContent()).trim(), '就绪')
    await page.goto('/bookings')
    assert.equal((await page.locator('#status-filter option[value=ready]').textContent()).trim(), '就绪')
    await zh.close()
  })

  for (const locale of ['zh-CN', 'en']) {
    it(`item 2: the time-zone picker is a labelled, searchable combobox with offsets, common zones first (${locale})`, async () => {
      // A browser zone outside the common list, so "the browser's zone first" can be seen.
      const { context, page } = await personIn(browser, 'mallory', { lang: locale, timezoneId: 'Atlantic/Reykjavik' })
      const before = (await me(context)).timezone
      await page.goto('/profile')
      const box = page.getByRole('combobox', { name: messages[locale].profile.timeZone })
      await box.waitFor()
      assert.equal(await box.getAttribute('data-value'), before, 'the field holds the stored IANA name')
      await box.click()
      assert.equal(await box.getAttribute('aria-expanded'), 'true')
      const listbox = page.getByRole('listbox')
      const zones = () => listbox.getByRole('option').evaluateAll((els) => els.map((e) => e.dataset.zone))
      const all = await zones()
      assert.deepEqual(all.slice(0, 3), ['Atlantic/Reykjavik', 'Asia/Shanghai', 'UTC'], 'browser zone, then the common ones')
      assert.ok(all.includes('Europe/Berlin') && all.includes('America/Los_Angeles'))

      const shanghai = listbox.locator('[data-zone="Asia/Shanghai"]')
      for (const query of ['上海', 'Shanghai', '+08']) {
        await box.fill(query)
        const found = await zones()
        assert.ok(found.includes('Asia/Shanghai'), `"${query}" finds Asia/Shanghai (got ${found.slice(0, 5)})`)
        assert.ok(found.length < 60, `"${query}" narrows the list (${found.length} left)`)
      }
      const text = await shanghai.textContent()
      assert.match(text, /UTC\+08:00/, 'the offset is shown')
      // Its name in the page's language (Chromium's CLDR names; never just the raw IANA id).
      assert.match(text, locale === 'zh-CN' ? /中国/ : /China/)
      for (const offset of await listbox.getByRole('option').evaluateAll((els) => els.map((e) => e.textContent))) {
        assert.match(offset, /\+08/, 'a "+08" search lists only zones at +08')
      }

      // Keyboard only: type, arrow to the second match, Enter, save.
      await box.fill('Europe/Be')
      const matches = await zones()
      assert.ok(matches.length >= 2, matches.join())
      await box.press('ArrowDown')
      const activeId = await box.getAttribute('aria-activedescendant')
      assert.equal(await page.locator(`#${activeId}`).getAttribute('data-zone'), matches[1])
      await box.press('Enter')
      assert.equal(await box.getAttribute('aria-expanded'), 'false')
      assert.equal(await box.getAttribute('data-value'), matches[1])
      await page.locator('[data-testid=profile-form] button[type=submit]').click()
      await page.locator('.toast, [role=status]').first().waitFor().catch(() => {})
      await page.waitForLoadState('networkidle')
      assert.equal((await me(context)).timezone, matches[1], 'the stored value is the IANA name')
      assert.equal((await apiCall(context, 'PATCH', '/api/v1/me/', { timezone: before })).status, 200)
      await context.close()
    })
  }

  for (const locale of ['zh-CN', 'en']) {
    it(`item 6: the approval queue shows extensions with quota impact and conflicts, decides in bulk, keeps a history (${locale})`, async () => {
      const text = messages[locale].approvals
      const alice = (await signIn(browser, 'alice')).context
      const carol = (await signIn(browser, 'carol')).context
      const bobApi = (await signIn(browser, 'bob')).context
      const pool = (await listPools(alice)).find((p) => p.requires_approval)
      const pending = async (minutes, purpose) => {
        const w = await freeWindow(alice, pool, minutes)
        const end = new Date(new Date(w.start).getTime() + Math.min(minutes, 120) * 60_000).toISOString()
        return { ...(await book(alice, { pool: pool.id, start: w.start, end, purpose })), window: w }
      }
      // An approved booking whose extension waits, with maintenance declared over the asked time.
      const extended = await pending(240, `e2e ext ${locale}`)
      assert.equal((await apiCall(bobApi, 'POST', `/api/v1/bookings/${extended.id}/approve/`, {})).status, 200)
      const ask = await apiCall(alice, 'POST', `/api/v1/bookings/${extended.id}/extend/`, { end: extended.window.end })
      assert.equal(new Date(ask.body.pending_end).getTime(), new Date(extended.window.end).getTime(), JSON.stringify(ask.body))
      const reason = `e2e maintenance ${locale} ${Date.now()}`
      const blackoutStart = new Date(new Date(extended.end).getTime() + 30 * 60_000).toISOString()
      const blackout = await apiCall(carol, 'POST', '/api/v1/blackouts/', { pool: pool.id, start: blackoutStart, end: extended.window.end, reason })
      assert.equal(blackout.status, 201, JSON.stringify(blackout.body))
      const [a, b, c] = [await pending(120, 'e2e bulk a'), await pending(120, 'e2e bulk b'), await pending(120, 'e2e bulk c')]

      const { context, page } = await personIn(browser, 'bob', { lang: locale })
      await page.goto('/approvals')
      const ext = page.locator(`[data-testid=pending-bookings] tr[data-booking-id="${extended.id}"]`)
      await ext.waitFor()
      assert.equal(await ext.getAttribute('data-kind'), 'extension')
      assert.ok((await ext.textContent()).includes(text.extension))
      await ext.locator('[data-testid=extension-end]').waitFor()
      assert.ok((await ext.locator('[data-testid=conflicts]').textContent()).includes(reason), 'the blackout over the extension is listed')
      // Quota impact against the quota API: the lab's limit for that month, before → after. The
      // approval judges an extension from its current end on, so the first line is the UTC month
      // that end lies in (not the start's: late on a month's last day they differ).
      const month = new Date(extended.end).toISOString().slice(0, 7)
      const quotas = (await apiCall(bobApi, 'GET', `/api/v1/quotas/?lab=${extended.lab.id}&month=${month}-01`)).body
      const quota = (Array.isArray(quotas) ? quotas : quotas.results).find((q) => q.instance_type === pool.instance_type)
      const impact = (await ext.locator('[data-testid=quota-impact]').textContent()).replace(/,/g, '')
      // The limit as a whole number in the text ("40" must not be found inside "140").
      assert.match(impact, new RegExp(`(?<![\\d.])${Number(quota.gpu_hours)}(?![\\d.]*\\d)`), `"${impact}" names the limit ${quota.gpu_hours}`)
      const gpus = (await apiCall(bobApi, 'GET', `/api/v1/instance-types/${pool.instance_type}/`)).body.gpu_count
      const [before, after] = impact.match(/([\d.]+) → ([\d.]+)/).slice(1).map(Number)
      // The extension's GPU-hours in that month (the rest, if it runs past the month's end, is the next line's).
      const monthEnd = Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)), 1)
      const extensionMinutes = (Math.min(Date.parse(extended.window.end), monthEnd) - Date.parse(extended.end)) / 60_000
      assert.equal(Math.round((after - before) * 60), Math.round(extensionMinutes * gpus), 'after − before is the extension’s GPU-hours')
      await screenshot(page, `approvals-queue-${locale}`)

      // Select three; one is decided elsewhere meanwhile; reject the selection with one reason.
      for (const id of [a.id, b.id, c.id]) await page.locator(`tr[data-booking-id="${id}"] [data-testid=select-row]`).check()
      assert.equal((await apiCall(bobApi, 'POST', `/api/v1/bookings/${c.id}/approve/`, {})).status, 200)
      await page.click('[data-testid=bulk-reject]')
      await page.locator('#bulk-reason-error').waitFor()
      await page.fill('[data-testid=bulk-reason]', `e2e bulk ${locale}`)
      await page.click('[data-testid=bulk-reject]')
      const failure = page.locator(`[data-testid=bulk-errors] li[data-booking-id="${c.id}"]`)
      await failure.waitFor()
      assert.ok((await failure.textContent()).includes(messages[locale].errors.code.already_decided))
      for (const id of [a.id, b.id]) {
        assert.equal((await apiCall(bobApi, 'GET', `/api/v1/bookings/${id}/`)).body.status, 'rejected')
        const audit = (await apiCall(bobApi, 'GET', `/api/v1/audit/?action=booking.reject&target_id=${id}`)).body.results
        assert.deepEqual(audit.map((e) => [e.actor, e.data.reason]), [['bob', `e2e bulk ${locale}`]], 'each decision is audited')
      }
      assert.equal((await apiCall(bobApi, 'GET', `/api/v1/bookings/${c.id}/`)).body.status, 'scheduled')

      await page.click('[data-testid=approvals-tab-history]')
      const row = page.locator(`[data-testid=decision-history] tr[data-target-id="${a.id}"][data-action="booking.reject"]`)
      await row.waitFor()
      const cells = await row.locator('td').allTextContents()
      assert.equal(cells[1].trim(), 'bob')
      assert.equal(cells[2].trim(), text.decisions.reject)
      assert.equal(cells[4].trim(), `e2e bulk ${locale}`)
      assert.deepEqual(await seriousViolations(page), [])
      await screenshot(page, `approvals-history-${locale}`)
      await apiCall(carol, 'DELETE', `/api/v1/blackouts/${blackout.body.id}/`)
      for (const id of [extended.id, c.id]) await cancelBooking(alice, id)
      await context.close()
    })
  }
})

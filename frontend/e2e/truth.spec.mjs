// Issue 24 ([spa-truth]): the app says what is true. Each test checks what the page shows against
// what the server holds (the API's answer), in both languages where words matter.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import {
  apiCall, book, bookNow, cancelBooking, django, fillWindow, freeWindow, listPools, makeReady, me, messages, personIn, signIn, submitForm,
  useBrowser, wallTime,
} from './support.mjs'

/** The catalogue's sentence up to its first placeholder: what the page must show whatever the time. */
const lead = (text) => text.split('{')[0]

describe('the app says what is true (issue 24, truth)', () => {
  const { browser, cleanup } = useBrowser()

  for (const locale of ['zh-CN', 'en']) {
    it(`item 3: an extension that needs approval is reported as waiting, the end stays and the page shows the asked end (${locale})`, async () => {
      const text = messages[locale].booking
      const alice = (await signIn(browser, 'alice')).context
      const bob = (await signIn(browser, 'bob')).context
      const pool = (await listPools(alice)).find((p) => p.requires_approval)
      assert.ok(pool, 'the demo data has a pool that needs approval')
      const window = await freeWindow(alice, pool, 240)
      const end = new Date(Date.parse(window.start) + 120 * 60_000).toISOString()
      const booking = await book(alice, { pool: pool.id, start: window.start, end, purpose: `e2e truth ext ${locale}` })
      cleanup.push(() => cancelBooking(alice, booking.id))
      assert.equal((await apiCall(bob, 'POST', `/api/v1/bookings/${booking.id}/approve/`, {})).status, 200)

      const { context, page } = await personIn(browser, 'alice', { lang: locale })
      await page.goto(`/bookings/${booking.id}`)
      await page.locator('[data-testid=booking-extend-open]').click()
      const [answer] = await Promise.all([
        page.waitForResponse((r) => r.url().endsWith(`/bookings/${booking.id}/extend/`)),
        page.locator('form.extend button[type=submit]').click(),
      ])
      assert.equal(answer.status(), 200, await answer.text())
      const held = (await apiCall(alice, 'GET', `/api/v1/bookings/${booking.id}/`)).body
      assert.ok(held.pending_end, 'the server holds the extension as pending')
      assert.equal(Date.parse(held.end), Date.parse(end), 'the end stays until approval')

      const toast = page.locator('.toast').last()
      await toast.waitFor()
      const said = await toast.innerText()
      assert.ok(said.startsWith(lead(text.extensionPending)), `toast: ${said}`)
      assert.ok(!said.includes(text.extended), `the toast must not say "${text.extended}"`)
      const note = await page.locator('[data-testid=booking-pending-end]').innerText()
      assert.ok(note.startsWith(lead(text.pendingEndNote)), note)
      await page.locator('[data-testid=booking-end-pending]').waitFor()
      await context.close()
    })
  }

  for (const locale of ['zh-CN', 'en']) {
    it(`item 4: a member-limit refusal says the server's figures in ${locale}, with no "time is taken" box`, async () => {
      const text = messages[locale]
      const alice = (await signIn(browser, 'alice')).context
      const pool = (await listPools(alice)).find((p) => !p.requires_approval)
      const who = await me(alice)
      const before = django(`from labgpu.accounts.models import Membership as M; import json; print(json.dumps({m.pk: m.max_hours_per_week for m in M.objects.filter(user_id=${who.id})}))`)
      const saved = JSON.parse(before.split('\n').pop())
      // Restored at this test's end, not the suite's: the next test reads the limits afresh.
      const restore = () => {
        for (const [pk, hours] of Object.entries(saved)) {
          django(`from labgpu.accounts.models import Membership as M; M.objects.filter(pk=${pk}).update(max_hours_per_week=${hours ?? 'None'})`)
        }
      }
      django(`from labgpu.accounts.models import Membership as M; M.objects.filter(user_id=${who.id}).update(max_hours_per_week=1)`)
      try {
        const window = await freeWindow(alice, pool, 120)

        const { context, page } = await personIn(browser, 'alice', { lang: locale })
        await page.goto(`/bookings/new?pool=${pool.id}`)
        await page.locator('#booking-start').waitFor()
        await fillWindow(page, locale, who.timezone, { start: window.start, end: new Date(Date.parse(window.start) + 2 * 3_600_000).toISOString() })
        const answer = await submitForm(page)
        assert.equal(answer.status, 409, JSON.stringify(answer.body))
        assert.equal(answer.body.code, 'member_hours_exceeded')
        const shown = await page.locator('[data-testid=form-error]').innerText()
        assert.ok(shown.includes(lead(text.errors.detail.member_hours_exceeded)), shown)
        // The server's week, as the member's Monday, and their limit of 1 hour.
        assert.ok(shown.includes(answer.body.extra.week_start), `${shown} names the week ${answer.body.extra.week_start}`)
        assert.match(shown, /(?<![\d.])1(?![\d.]*\d)/)
        assert.ok(shown.includes(text.booking.memberLimitHelp), shown)
        assert.ok(!(await page.content()).includes(text.booking.conflictTitle), 'no "that time is taken" box')
        await context.close()
      } finally {
        restore()
      }
    })
  }

  it('item 4: a quota refusal names the month and what is left, and lets a lab admin request more for that month', async () => {
    const text = messages.en
    const bob = (await signIn(browser, 'bob')).context
    const pool = (await listPools(bob)).find((p) => !p.requires_approval)
    const who = await me(bob)
    const window = await freeWindow(bob, pool, 60)
    const month = window.start.slice(0, 7)
    const labs = who.memberships.map((m) => m.lab.id).join(',')
    const rows = `Quota.objects.filter(lab_id__in=[${labs}], instance_type_id=${pool.instance_type}, month='${month}-01')`
    const saved = django(`from labgpu.quotas.models import Quota; import json; print(json.dumps({q.pk: str(q.gpu_hours) for q in ${rows}}))`)
    // Restored at this test's end: the tests after it book in the same lab.
    const restore = () => {
      for (const [pk, hours] of Object.entries(JSON.parse(saved.split('\n').pop()))) {
        django(`from labgpu.quotas.models import Quota; Quota.objects.filter(pk=${pk}).update(gpu_hours='${hours}')`)
      }
    }
    django(`from labgpu.quotas.models import Quota; ${rows}.update(gpu_hours=0)`)
    try {
      const { context, page } = await personIn(browser, 'bob', { lang: 'en' })
      await page.goto(`/bookings/new?pool=${pool.id}`)
      await page.locator('#booking-start').waitFor()
      await fillWindow(page, 'en', who.timezone, { start: window.start, end: new Date(Date.parse(window.start) + 3_600_000).toISOString() })
      const answer = await submitForm(page)
      assert.equal(answer.status, 409, JSON.stringify(answer.body))
      assert.equal(answer.body.code, 'quota_exceeded')
      const shown = await page.locator('[data-testid=form-error]').innerText()
      assert.ok(shown.includes(`in ${answer.body.extra.month.slice(0, 7)}`), shown)
      assert.ok(shown.includes(`has ${Number(answer.body.extra.remaining_gpu_hours)} left`), shown)
      assert.ok(!(await page.content()).includes(text.booking.conflictTitle), 'no "that time is taken" box')
      await page.locator('[data-testid=quota-request-link]').click()
      await page.waitForURL(`**/quotas?month=${answer.body.extra.month.slice(0, 7)}`)
      assert.equal(await page.inputValue('#quota-month'), answer.body.extra.month.slice(0, 7))
      await context.close()
    } finally {
      restore()
    }
  })

  for (const locale of ['zh-CN', 'en']) {
    it(`item 11: after End now the page says the booking ended and its node is going, then when it went (${locale})`, async () => {
      const text = messages[locale]
      const alice = (await signIn(browser, 'alice')).context
      const { id } = await bookNow(alice, { purpose: `e2e truth end now ${locale}` })
      makeReady(id, { ip: '203.0.113.9' })
      const { context, page } = await personIn(browser, 'alice', { lang: locale })
      await page.goto(`/bookings/${id}`)
      const panel = page.locator('[data-testid=booking-running]')
      assert.equal(await panel.locator('[data-testid=booking-running-heading]').innerText(), text.booking.running)
      await page.locator('[data-testid=booking-end-early]').click()
      await page.locator('[data-app-confirm] [data-testid=confirm-ok]').click()
      await page.locator('[data-testid=booking-status][data-status=ending]').waitFor()
      await panel.and(page.locator('[data-status=ending]')).waitFor()

      const ended = (await apiCall(alice, 'GET', `/api/v1/bookings/${id}/`)).body
      assert.equal(ended.status, 'ending')
      assert.equal(await panel.locator('[data-testid=booking-running-heading]').innerText(), text.booking.endingNow)
      assert.equal(await panel.locator('[data-testid=booking-time-left]').count(), 0, 'no time left is shown for an ended booking')
      const endedAt = new Intl.DateTimeFormat(locale, { timeZone: (await me(alice)).timezone, dateStyle: 'medium', timeStyle: 'short' })
        .format(new Date(ended.ended_at))
      assert.equal(await panel.locator('[data-testid=booking-ended-at]').innerText(), endedAt)
      assert.equal(await panel.locator('[data-testid=extend-quick-1]').count(), 0)

      // The teardown finishes (the workers' part, done here): the node says when it went, not "for 0 minutes".
      django(`
from labgpu.bookings.models import Booking
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
Node.objects.filter(booking_id=${id}).update(status="destroyed", destroyed_at=now(), status_changed_at=now())
Booking.objects.filter(pk=${id}).update(status="completed", status_changed_at=now())
`)
      await page.reload()
      await page.locator('[data-testid=booking-status][data-status=completed]').waitFor()
      const node = (await apiCall(alice, 'GET', `/api/v1/bookings/${id}/`)).body.node
      const went = new Intl.DateTimeFormat(locale, { timeZone: (await me(alice)).timezone, dateStyle: 'medium', timeStyle: 'short' })
        .format(new Date(node.status_changed_at))
      const inState = await page.locator('[data-testid=node-in-state]').innerText()
      assert.ok(inState.includes(text.node.atTime.replace('{time}', went)), inState)
      assert.ok(!inState.includes(lead(text.node.inState)) || lead(text.node.inState) === '', inState)
      await context.close()
    })
  }

  it('item 2: the calendar\'s today and now line follow the profile\'s zone, not the browser\'s', async () => {
    const alice = (await signIn(browser, 'alice')).context
    const { timezone } = await me(alice)
    const pool = (await listPools(alice))[0]
    const day = (zone) => wallTime(new Date().toISOString(), zone).slice(0, 10)
    // A browser whose date differs from the profile's right now (one of the two always does).
    const browserZone = ['Pacific/Pago_Pago', 'Pacific/Kiritimati'].find((z) => day(z) !== day(timezone))
    assert.ok(browserZone, `no browser zone with a date other than ${timezone}'s`)
    const { context, page } = await personIn(browser, 'alice', { lang: 'en', timezoneId: browserZone })
    assert.equal(await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone), browserZone)
    await page.goto(`/calendar/${pool.id}?view=day&date=${day(timezone)}`)
    const calendar = page.locator('[data-testid=calendar]')
    // The profile's today is the widget's today (its column, not the Today button), and the now line is drawn on it.
    await calendar.locator(':not(button).ec-today').first().waitFor()
    await calendar.locator('.ec-now-indicator').first().waitFor({ state: 'attached' })
    // The browser's own date is not today there.
    await page.goto(`/calendar/${pool.id}?view=day&date=${day(browserZone)}`)
    // (The widget first lays out its default day, then moves to the asked one.)
    await page.waitForFunction(() => document.querySelector('[data-testid=calendar] .ec-day') && !document.querySelector('[data-testid=calendar] :not(button).ec-today'), null, { timeout: 10_000 })
    assert.equal(await calendar.locator('.ec-now-indicator').count(), 0, `${day(browserZone)} is not today in ${timezone}`)
    await context.close()
  })
})

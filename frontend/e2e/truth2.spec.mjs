// Issue 24 ([spa-truth]), items 8, 9, 10 and 12: the layout holds on a 1440 px screen and on a
// 390×844 phone, an expired session keeps what was typed, and the small untruths are gone. Each
// test measures what Chromium laid out (boxes, lines) or what the server holds, in both languages.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import {
  anonymous, apiCall, book, bookNow, cancelBooking, django, djangoValue, fillWindow, freeWindow, listPools, makeReady, me, messages,
  openedBookingId, personIn, screenshot, signIn, signInOnPage, submitForm, useBrowser,
} from './support.mjs'

const WIDE = { width: 1440, height: 900 }
const PHONE = { width: 390, height: 844 }

/**
 * What a phone shows of every table on the page: the controls (links, buttons, fields) in a table
 * that lie beyond the screen or beyond an element that clips them (a card scrolling sideways with
 * no hint counts: the control is not there to see), the column names whose words break (a line per
 * character, 结/果), and how far the page scrolls sideways.
 */
function phoneTables(page) {
  return page.evaluate(() => {
    const shown = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden'
    const clipped = (e) => {
      const box = e.getBoundingClientRect()
      if (box.width <= 1 && box.height <= 1) return false // a screen reader's label (.sr-only)
      if (box.left < 0 || box.right > window.innerWidth + 0.5) return true
      for (let up = e.parentElement; up; up = up.parentElement) {
        if (getComputedStyle(up).overflowX === 'visible') continue
        const frame = up.getBoundingClientRect()
        if (box.left < frame.left - 0.5 || box.right > frame.right + 0.5) return true
      }
      return false
    }
    // Lines of an element's words: rectangles beside each other vertically share a line.
    const lines = (e) => {
      const rows = []
      const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT)
      for (let text = walk.nextNode(); text; text = walk.nextNode()) {
        const range = document.createRange()
        range.selectNodeContents(text)
        for (const r of range.getClientRects()) {
          const middle = (r.top + r.bottom) / 2
          if (r.width && !rows.some((row) => middle > row.top && middle < row.bottom)) rows.push(r)
        }
      }
      return rows.length
    }
    // The width one word of `text` takes in `style`'s font, laid out on one line.
    const probe = document.createElement('span')
    probe.style.cssText = 'position:absolute;visibility:hidden;white-space:nowrap;left:0;top:0'
    document.body.append(probe)
    const widest = (text, style) => {
      probe.style.font = style.font
      probe.style.letterSpacing = style.letterSpacing
      return Math.max(...text.split(/\s+/).filter(Boolean).map((word) => {
        probe.textContent = word
        return probe.getBoundingClientRect().width
      }))
    }
    const tables = [...document.querySelectorAll('main table')].filter(shown)
    const controls = tables.flatMap((t) => [...t.querySelectorAll('a[href], button, input, select, textarea')])
    const brokenHeads = []
    for (const t of tables) {
      for (const th of t.querySelectorAll('th')) {
        const text = th.innerText.trim()
        if (!shown(th) || !text || th.getBoundingClientRect().width <= 1) continue
        const words = text.split(/\s+/).length
        if (lines(th) > words) brokenHeads.push(`${text} (${lines(th)} lines)`)
      }
      // A column name written beside each cell (a table laid out as cards) must fit its words too.
      for (const td of t.querySelectorAll('td[data-label]')) {
        const before = getComputedStyle(td, '::before')
        if (!shown(td) || before.content === 'none' || before.display === 'none') continue
        const label = td.dataset.label
        if (label && widest(label, before) > td.clientWidth + 0.5) brokenHeads.push(`${label} (in ${Math.round(td.clientWidth)} px)`)
      }
    }
    probe.remove()
    return {
      tables: tables.length,
      cut: controls.filter((c) => shown(c) && clipped(c)).map((c) => {
        const box = c.getBoundingClientRect()
        return `${c.tagName.toLowerCase()} "${(c.innerText || c.getAttribute('aria-label') || '').trim()}" at x ${Math.round(box.left)}–${Math.round(box.right)}`
      }),
      brokenHeads,
      sideways: document.documentElement.scrollWidth - window.innerWidth,
    }
  })
}

/** The header's layout: whether its controls share one row, and any control whose text wraps. */
function headerLayout(page) {
  return page.evaluate(() => {
    const lines = (el) => {
      // Rectangles of its words that lie beside each other vertically share a line.
      const rows = []
      const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT)
      for (let text = walk.nextNode(); text; text = walk.nextNode()) {
        const range = document.createRange()
        range.selectNodeContents(text)
        for (const r of range.getClientRects()) {
          if (!r.width) continue
          const middle = (r.top + r.bottom) / 2
          if (!rows.some((row) => middle > row.top && middle < row.bottom)) rows.push(r)
        }
      }
      return rows.length
    }
    const header = document.querySelector('header')
    const controls = [...header.querySelectorAll('a, button, select')].filter((e) => e.getClientRects().length)
    const boxes = controls.map((e) => e.getBoundingClientRect())
    return {
      height: Math.round(header.getBoundingClientRect().height),
      oneRow: Math.max(...boxes.map((b) => b.top)) < Math.min(...boxes.map((b) => b.bottom)),
      wrapped: controls.filter((e) => e.tagName !== 'SELECT' && lines(e) > 1).map((e) => e.innerText.trim()),
      outside: controls.filter((e) => e.getBoundingClientRect().right > window.innerWidth).map((e) => e.innerText.trim()),
    }
  })
}

describe('the layout holds and nothing is lost (issue 24, items 8–10, 12)', () => {
  const { browser, cleanup } = useBrowser()

  for (const lang of ['en', 'zh-CN']) {
    it(`item 8: a session that expires under the booking form says why, keeps what was typed and comes back to it (${lang})`, async () => {
      const text = messages[lang]
      const alice = (await signIn(browser, 'alice')).context
      const who = await me(alice)
      const pool = (await listPools(alice)).find((p) => !p.requires_approval)
      const window = await freeWindow(alice, pool, 120)
      const typed = { start: window.start, end: new Date(Date.parse(window.start) + 2 * 3_600_000).toISOString() }
      const purpose = `e2e expired draft ${lang} ${Date.now()}`
      // A session of its own (signed in on the page), so ending it ends no other test's.
      const { context, page } = await anonymous(browser, lang)
      await page.goto('/login')
      await signInOnPage(page, 'alice')
      const path = `/bookings/new?pool=${pool.id}`
      await page.goto(path)
      await page.locator('#booking-start').waitFor()
      await fillWindow(page, lang, who.timezone, typed)
      await page.locator('#booking-purpose').fill(purpose)
      const fields = { start: await page.inputValue('#booking-start'), end: await page.inputValue('#booking-end') }
      // The session ends on the server (expired, or signed out elsewhere).
      const key = (await context.cookies()).find((c) => c.name === 'sessionid').value
      assert.equal(djangoValue(`from django.contrib.sessions.models import Session; print(Session.objects.filter(session_key="${key}").delete()[0])`), '1')

      await page.locator('[data-testid=booking-submit]').click()
      await page.waitForURL(/\/login\?/)
      assert.equal(new URL(page.url()).searchParams.get('next'), path, 'the login page knows where they were')
      assert.equal((await page.locator('[data-testid=session-expired]').innerText()).trim(), text.login.expiredDraftKept)
      await signInOnPage(page, 'alice')
      await page.waitForURL((url) => `${url.pathname}${url.search}` === path)
      await page.locator('[data-testid=draft-restored]').waitFor()
      assert.equal(await page.inputValue('#booking-purpose'), purpose)
      assert.equal(await page.inputValue('#booking-start'), fields.start)
      assert.equal(await page.inputValue('#booking-end'), fields.end)
      // Booked as typed: the server holds the purpose and the window.
      const answer = await submitForm(page)
      assert.equal(answer.status, 201, JSON.stringify(answer.body))
      cleanup.push(() => cancelBooking(alice, answer.body.id))
      await openedBookingId(page)
      const held = (await apiCall(alice, 'GET', `/api/v1/bookings/${answer.body.id}/`)).body
      assert.equal(held.purpose, purpose)
      assert.equal(Date.parse(held.start), Date.parse(typed.start))
      assert.equal(Date.parse(held.end), Date.parse(typed.end))
      await context.close()
    })
  }

  it('item 12: a pool of one node says "1 node", not "1 nodes", on its calendar and in the form', async () => {
    const alice = (await signIn(browser, 'alice')).context
    const pool = (await listPools(alice)).find((p) => p.capacity === 1)
    assert.ok(pool, 'the demo data has a pool of one node')
    const { context, page } = await personIn(browser, 'alice', { lang: 'en' })
    await page.goto(`/calendar/${pool.id}`)
    await page.locator('[data-testid=calendar]').waitFor()
    const calendar = await page.locator('main').innerText()
    assert.match(calendar, /· 1 node(?!s)/, 'the pool summary')
    assert.doesNotMatch(calendar, /\b1 nodes\b/)
    await page.goto(`/bookings/new?pool=${pool.id}`)
    await page.getByText(/of 1 node free/).first().waitFor()
    assert.doesNotMatch(await page.locator('main').innerText(), /\b1 nodes\b/)
    await context.close()
  })

  for (const lang of ['en', 'zh-CN']) {
    it(`item 12: the booking form says "needs approval" once for a pool that needs it (${lang})`, async () => {
      const phrase = messages[lang].pool.needsApproval
      const alice = (await signIn(browser, 'alice')).context
      const pool = (await listPools(alice)).find((p) => p.requires_approval)
      const { context, page } = await personIn(browser, 'alice', { lang })
      await page.goto(`/bookings/new?pool=${pool.id}`)
      await page.locator('#booking-pool').waitFor()
      await page.selectOption('#booking-pool', String(pool.id))
      await page.locator('[data-testid=booking-submit]').waitFor()
      const said = await page.locator('[data-testid=booking-form]').evaluate((form, words) => {
        const select = form.querySelector('#booking-pool')
        const outside = [...form.querySelectorAll('*')]
          .filter((e) => !select.contains(e) && e.getClientRects().length && [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.includes(words)))
        return { selected: select.selectedOptions[0].textContent.includes(words), outside: outside.length }
      }, phrase)
      assert.equal(said.selected + said.outside, 1, `"${phrase}" is said ${said.selected + said.outside} times`)
      await context.close()
    })
  }

  it('item 12: each approval row says what its own request adds to the quota, not only the lab\'s total', async () => {
    const alice = (await signIn(browser, 'alice')).context
    const pool = (await listPools(alice)).find((p) => p.requires_approval)
    const gpus = (await apiCall(alice, 'GET', `/api/v1/instance-types/${pool.instance_type}/`)).body.gpu_count
    const first = await freeWindow(alice, pool, 180)
    // Two requests of one lab in one month: the lab's "after" is the same on both rows.
    const a = await book(alice, { pool: pool.id, start: first.start, end: new Date(Date.parse(first.start) + 3_600_000).toISOString(), purpose: 'e2e quota row a' })
    cleanup.push(() => cancelBooking(alice, a.id))
    const second = await freeWindow(alice, pool, 180, new Date(Date.parse(first.start) + 3 * 3_600_000))
    const b = await book(alice, { pool: pool.id, start: second.start, end: new Date(Date.parse(second.start) + 3 * 3_600_000).toISOString(), purpose: 'e2e quota row b' })
    cleanup.push(() => cancelBooking(alice, b.id))
    for (const lang of ['en', 'zh-CN']) {
      const { context, page } = await personIn(browser, 'bob', { lang })
      await page.goto('/approvals')
      for (const booking of [a, b]) {
        const hours = ((Date.parse(booking.end) - Date.parse(booking.start)) / 3_600_000) * gpus
        const line = (await page.locator(`[data-booking-id="${booking.id}"] [data-testid=quota-impact]`).innerText()).replace(/,/g, '')
        assert.match(line, new RegExp(`\\+${hours}(?![\\d.])`), `${lang}: "${line}" says booking ${booking.id} adds ${hours} GPU-hours`)
      }
      await context.close()
    }
  })

  for (const lang of ['en', 'zh-CN']) {
    it(`item 12: a researcher who opens /catalog is told it is for site admins (${lang})`, async () => {
      const text = messages[lang]
      const { context, page } = await personIn(browser, 'alice', { lang })
      await page.goto('/catalog')
      await page.waitForURL((url) => url.pathname === '/')
      const said = (await page.locator('[data-testid=page-refused]').innerText()).trim()
      assert.equal(said, text.dashboard.refused.replace('{page}', text.nav.catalog).replace('{who}', text.dashboard.refusedWho.site_admin))
      await context.close()
    })
  }

  it('item 12: a site admin ending someone else\'s booking is asked why, and the reason is audited', async () => {
    const alice = (await signIn(browser, 'alice')).context
    const { id } = await bookNow(alice, { purpose: 'e2e force end reason' })
    cleanup.push(() => cancelBooking(alice, id))
    makeReady(id, { ip: '203.0.113.23' })
    const { context, page } = await personIn(browser, 'carol', { lang: 'zh-CN' })
    await page.goto(`/bookings/${id}`)
    await page.locator('[data-testid=booking-end-early]').click()
    const reason = page.locator('[data-app-confirm] [data-testid=confirm-reason]')
    await reason.waitFor()
    assert.equal(await page.locator('[data-app-confirm] [data-testid=confirm-ok]').isDisabled(), true, 'no end without a reason')
    const why = `e2e: node needed for the maintenance window ${Date.now()}`
    await reason.fill(why)
    await page.locator('[data-app-confirm] [data-testid=confirm-ok]').click()
    await page.locator('[data-testid=booking-status][data-status=ending]').waitFor()
    const audited = djangoValue(`from labgpu.audit.models import AuditEvent; e = AuditEvent.objects.filter(action="booking.force_end", target_id="${id}").latest("created_at"); print(e.data["reason"])`)
    assert.equal(audited, why)
    await context.close()
  })

  it('item 12: a signed-out visit to /login and / asks nothing it is refused (no 401 in the console)', async () => {
    const { context, page } = await anonymous(browser, 'en')
    const refused = []
    page.on('response', (r) => r.status() >= 400 && refused.push(`${r.status()} ${new URL(r.url()).pathname}`))
    page.on('console', (m) => m.type() === 'error' && refused.push(`console: ${m.text()}`))
    for (const path of ['/login', '/']) {
      await page.goto(path)
      await page.locator('[data-testid=login-form]').waitFor()
      await page.waitForLoadState('networkidle')
    }
    assert.deepEqual(refused, [])
    // Signed in, the same page knows who they are.
    await signInOnPage(page, 'dave')
    await page.locator('[data-testid=logout]').waitFor()
    await context.close()
  })

  it('item 9: on a 390×844 phone every table keeps its controls on the screen and its column names whole (en, zh-CN)', async () => {
    const alice = (await signIn(browser, 'alice')).context
    const bob = (await signIn(browser, 'bob')).context
    const carol = (await signIn(browser, 'carol')).context
    const stamp = Date.now()
    // Something in every table: a token, a feed, a quota request, an invitation, a directory
    // group, a running node with a health report (smoke results with baselines), a blackout over a booking.
    const token = await apiCall(alice, 'POST', '/api/v1/tokens/', { name: `e2e phone ${stamp}`, scopes: ['read'] })
    assert.equal(token.status, 201, JSON.stringify(token.body))
    cleanup.push(() => apiCall(alice, 'DELETE', `/api/v1/tokens/${token.body.id}/`))
    const feed = await apiCall(alice, 'POST', '/api/v1/feeds/', { kind: 'user', name: `e2e phone ${stamp}` })
    assert.equal(feed.status, 201, JSON.stringify(feed.body))
    const lab = (await me(bob)).memberships.find((m) => m.role === 'lab_admin').lab.id
    const quotas = (await apiCall(bob, 'GET', `/api/v1/quotas/?lab=${lab}&page_size=100`)).body
    const quota = (quotas.results ?? quotas)[0]
    const asked = await apiCall(bob, 'POST', '/api/v1/quota-requests/', {
      lab, instance_type: quota.instance_type, month: quota.month, gpu_hours: '5', reason: `e2e phone ${stamp}: a reason long enough for two lines`,
    })
    assert.equal(asked.status, 201, JSON.stringify(asked.body))
    const invited = await apiCall(bob, 'POST', `/api/v1/labs/${lab}/invitations/`, { email: `phone-${stamp}@example.org`, role: 'member' })
    assert.equal(invited.status, 201, JSON.stringify(invited.body))
    cleanup.push(() => apiCall(bob, 'DELETE', `/api/v1/labs/${lab}/invitations/${invited.body.id}/`))
    const group = await apiCall(carol, 'POST', '/api/v1/sso/group-mappings/', { source: 'oidc', group: `e2e-phone-${stamp}`, lab, role: 'member' })
    assert.equal(group.status, 201, JSON.stringify(group.body))
    cleanup.push(() => apiCall(carol, 'DELETE', `/api/v1/sso/group-mappings/${group.body.id}/`))
    const running = await bookNow(alice, { purpose: `e2e phone node ${stamp}` })
    cleanup.push(() => cancelBooking(alice, running.id))
    makeReady(running.id, { ip: '203.0.113.21' })
    django(`
from labgpu.core.timeutils import now
from labgpu.health.models import HealthReport
from labgpu.provisioning.models import Node
node = Node.objects.get(booking_id=${running.id})
HealthReport.objects.create(node=node, instance_type_id=node.booking.pool.instance_type_id, verdict="pass", collected_at=now(), smoke=[
    {"name": "matmul", "status": "pass", "metric": "bf16_tflops", "value": 612.5, "unit": "TFLOP/s", "baseline": 640.25, "reason": None},
    {"name": "membw", "status": "fail", "metric": "copy_gbps", "value": 2100, "unit": "GB/s", "baseline": 4100, "reason": "below 80% of the baseline"},
])
`)
    const volume = `e2e-phone-${stamp}`
    django(`
from labgpu.accounts.models import User
from labgpu.catalog.models import ProviderAccount
from labgpu.provisioning.models import Volume
Volume.objects.create(owner_user=User.objects.get(username="alice"), provider_account=ProviderAccount.objects.order_by("pk").first(),
    region="tor1", name="${volume}", size_gb=100, provider_id="", state="available")
`)
    cleanup.push(async () => django(`from labgpu.provisioning.models import Volume; Volume.objects.filter(name="${volume}").delete()`))
    const pool = (await listPools(alice)).find((p) => !p.requires_approval)
    const slot = await freeWindow(alice, pool, 60)
    const clash = await book(alice, { pool: pool.id, start: slot.start, end: slot.end, purpose: `e2e phone clash ${stamp}` })
    cleanup.push(() => cancelBooking(alice, clash.id))
    const blackout = await apiCall(carol, 'POST', '/api/v1/blackouts/', { pool: pool.id, start: slot.start, end: slot.end, reason: `e2e phone ${stamp}` })
    assert.equal(blackout.status, 201, JSON.stringify(blackout.body))
    cleanup.push(() => apiCall(carol, 'DELETE', `/api/v1/blackouts/${blackout.body.id}/`))

    // Every page with a table, who sees it, and what opens the tables it hides.
    const pages = [
      ['alice', '/'], ['alice', '/bookings'], ['alice', '/usage'], ['alice', '/tokens'], ['alice', '/feeds'],
      ['alice', '/chat-channels'], ['alice', '/volumes'], ['alice', `/bookings/${running.id}`],
      ['bob', '/approvals'], ['bob', '/labs'], ['bob', '/quotas'],
      ['carol', '/nodes', async (page) => {
        await page.locator(`[data-node-id] td button[aria-expanded]`).first().waitFor()
        await page.locator(`tr:has(a[href="/bookings/${running.id}"]) button[aria-expanded]`).click()
        await page.getByText('bf16_tflops').waitFor()
      }],
      ['carol', '/directory-groups'],
      ['carol', '/blackouts', async (page) => {
        const row = page.locator(`[data-blackout-id="${blackout.body.id}"]`)
        await row.locator('[data-testid=blackout-show-clashes]').click()
        await row.locator('[data-testid=blackout-clashes]').waitFor()
      }],
    ]
    const problems = []
    for (const lang of ['en', 'zh-CN']) {
      const contexts = {}
      for (const [username, path, open] of pages) {
        contexts[username] ??= await personIn(browser, username, { lang, viewport: PHONE })
        const { page } = contexts[username]
        await page.goto(path)
        await page.waitForLoadState('networkidle')
        if (open) await open(page)
        const where = `${username} ${path} (${lang})`
        if (!(await page.locator('main table').first().waitFor({ timeout: 10_000 }).then(() => true, () => false))) {
          problems.push(`${where}: no table shown`)
          continue
        }
        const seen = await phoneTables(page)
        if (seen.cut.length) problems.push(`${where}: off the screen: ${seen.cut.join('; ')}`)
        if (seen.brokenHeads.length) problems.push(`${where}: column names broken: ${seen.brokenHeads.join('; ')}`)
        if (seen.sideways > 0) problems.push(`${where}: the page scrolls ${seen.sideways} px sideways`)
        await screenshot(page, `phone-table-${username}-${path.replace(/\W+/g, '_')}-${lang}`)
      }
      for (const { context } of Object.values(contexts)) await context.close()
    }
    assert.deepEqual(problems, [])
  })

  for (const username of ['alice', 'bob', 'carol']) {
    for (const lang of ['en', 'zh-CN']) {
      it(`item 10: at 1440×900 ${username}'s header is one line, no control's words wrapped (${lang})`, async () => {
        const { context, page } = await personIn(browser, username, { lang, viewport: WIDE })
        await page.goto('/')
        await page.locator('[data-testid=logout]').waitFor()
        const seen = await headerLayout(page)
        assert.ok(seen.oneRow, `${username}'s header controls lie on more than one row (header ${seen.height} px high)`)
        assert.deepEqual(seen.wrapped, [], 'controls whose text wraps')
        assert.deepEqual(seen.outside, [], 'controls past the right edge')
        await context.close()
      })
    }
  }
})

// The daily-use bugs of issue 14 ([spa-daily]): each test walks what a researcher, lab admin or site
// admin did when the bug showed, and checks the result against the API or the rendered page.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import {
  BASE_URL, apiCall, book, bookingPath, bookNow, cancelBooking, django, djangoValue, freeWindow, lastMailAbout, listPools,
  makeReady, me, nativeDialogs, passwordOf, randomMorning, screenshot, sentMail, seriousViolations, signIn, useBrowser,
  wallTime,
} from './support.mjs'

/** WCAG contrast ratio of two computed CSS colours (`rgb(…)`/`rgba(…)`, opaque ones). */
function contrast(a, b) {
  const luminance = (css) => {
    const [r, g, bl] = css.match(/[\d.]+/g).slice(0, 3).map(Number).map((c) => {
      const s = c / 255
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4
    })
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl
  }
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x)
  return (hi + 0.05) / (lo + 0.05)
}

/** An on-demand booking of alice's that the lifecycle (driven here: e2e runs no workers) made ready. */
async function readyBooking(context, purpose) {
  const { id } = await bookNow(context, { purpose })
  makeReady(id, { ip: '203.0.113.7' })
  return id
}

/** The VEVENT of booking `id` in an ICS body, unfolded. */
function icsEvent(body, id) {
  const unfolded = body.replace(/\r?\n[ \t]/g, '')
  return unfolded.split('BEGIN:VEVENT').find((e) => e.includes(`UID:booking-${id}@`))
}

describe('daily use (issue 14)', () => {
  const { browser, cleanup } = useBrowser()

  it('bug 2: a lab admin saves a member’s max hours per week', async () => {
    const bob = await signIn(browser, 'bob')
    const labId = (await me(bob.context)).memberships.find((m) => m.role === 'lab_admin').lab.id
    const members = (await apiCall(bob.context, 'GET', `/api/v1/labs/${labId}/members/`)).body
    const alice = (members.results ?? members).find((m) => m.user.username === 'alice')
    cleanup.push(() =>
      apiCall(bob.context, 'PATCH', `/api/v1/labs/${labId}/members/${alice.id}/`, {
        max_hours_per_week: alice.max_hours_per_week,
      }),
    )
    const hours = 30 + Math.floor(Math.random() * 60)

    const page = bob.page
    await page.goto(`/labs/${labId}`)
    const input = page.getByLabel('Max hours per week for alice')
    await input.fill(String(hours))
    await page.locator('[data-testid=lab-members] tr', { has: input }).getByRole('button', { name: 'Save' }).click()
    await page.getByText('Member saved.').or(page.locator('main [role=alert]')).first().waitFor()
    assert.equal(await page.locator('main [role=alert]').count(), 0, await page.locator('main').textContent())

    const after = (await apiCall(bob.context, 'GET', `/api/v1/labs/${labId}/members/`)).body
    const saved = (after.results ?? after).find((m) => m.id === alice.id)
    assert.equal(Number(saved.max_hours_per_week), hours)
    await screenshot(page, 'lab-members-saved')
  })

  it('bug 3: a revoked API token shows as revoked, with no Revoke button, after a reload', async () => {
    const alice = await signIn(browser, 'alice')
    const name = `e2e revoke ${Date.now()}`
    const created = await apiCall(alice.context, 'POST', '/api/v1/tokens/', { name, scopes: ['read'] })
    assert.equal(created.status, 201)

    const page = alice.page
    await page.goto('/tokens')
    const row = page.locator('[data-testid=token-table] tbody tr', { hasText: name })
    const native = nativeDialogs(page)
    await row.getByRole('button', { name: 'Revoke' }).click()
    // Asked in the app's own dialog (issue 14: no native confirm()).
    await page.locator('[data-app-confirm] [data-testid=confirm-ok]').click()
    await page.getByText('Token revoked.').waitFor()
    assert.deepEqual(native, [])

    const listed = (await apiCall(alice.context, 'GET', '/api/v1/tokens/')).body
    assert.ok(listed.find((t) => t.id === created.body.id).revoked_at, 'the server has revoked it')
    await page.reload()
    await row.waitFor()
    assert.equal(await row.getByRole('button', { name: 'Revoke' }).count(), 0)
    assert.match(await row.locator('[data-testid=token-state]').textContent(), /Revoked/)
    await screenshot(page, 'tokens-revoked')
  })

  it('bug 4: a deep link opened while signed out is where sign-in lands', async () => {
    const context = await browser.newContext({ baseURL: BASE_URL, locale: 'en-US' })
    const page = await context.newPage()
    await page.goto('/feeds')
    await page.locator('[data-testid=login-form]').waitFor()
    await page.fill('#login-username', 'alice')
    await page.fill('#login-password', passwordOf('alice'))
    await page.click('[data-testid=login-submit]')
    await page.waitForURL((url) => !url.pathname.startsWith('/login'))
    assert.equal(new URL(page.url()).pathname, '/feeds')
    await page.locator('main h1').first().waitFor()
    await context.close()
  })

  it('bug 5: a researcher is offered no Cancel or Extend on a labmate’s booking', async () => {
    const bob = await signIn(browser, 'bob')
    const pool = (await listPools(bob.context)).find((p) => !p.requires_approval && p.capacity > 1)
    const window = await freeWindow(bob.context, pool, 60)
    const { id } = await book(bob.context, {
      pool: pool.id,
      start: window.start,
      end: new Date(Date.parse(window.start) + 3_600_000).toISOString(),
      purpose: 'e2e labmate',
    })
    cleanup.push(() => cancelBooking(bob.context, id))

    const alice = await signIn(browser, 'alice')
    const page = alice.page
    await page.goto(`/bookings/${id}`)
    await page.locator('[data-testid=booking-status][data-status=scheduled]').waitFor()
    assert.equal(await page.locator('[data-testid=booking-cancel], [data-testid=booking-extend-open]').count(), 0)
    assert.match(await page.locator('[data-testid=booking-not-yours]').textContent(), /bob's booking/)
    // The server agrees: it is not hers to change.
    const refused = await cancelBooking(alice.context, id)
    assert.equal(refused.status, 403)
    await screenshot(page, 'booking-detail-labmate')

    // Bob, its owner, still has them.
    await bob.page.goto(`/bookings/${id}`)
    await bob.page.locator('[data-testid=booking-cancel]').waitFor()
    await bob.page.locator('[data-testid=booking-extend-open]').waitFor()
  })

  it('bug 8: the header’s Book GPUs button stays readable on hover', async () => {
    const { page } = await signIn(browser, 'alice')
    await page.goto('/')
    const button = page.locator('header a[href="/bookings/new"]')
    await button.hover()
    const { color, background } = await button.evaluate((el) => {
      const style = getComputedStyle(el)
      return { color: style.color, background: style.backgroundColor }
    })
    const ratio = contrast(color, background)
    assert.ok(ratio >= 4.5, `text ${color} on ${background}: contrast ${ratio.toFixed(2)} < 4.5`)
    await screenshot(page, 'header-book-hover')
  })

  it('bug 6: a site admin sees every lab’s quotas and quota requests, and manages lab members', async () => {
    const bob = await signIn(browser, 'bob')
    const labId = (await me(bob.context)).memberships.find((m) => m.role === 'lab_admin').lab.id
    const carol = await signIn(browser, 'carol')
    const page = carol.page
    await page.goto('/quotas')
    // The month the page lists, as it says (the quota month in effect, not a date on any one clock).
    const month = `${await page.inputValue('#quota-month')}-01`
    const quotas = (await apiCall(bob.context, 'GET', `/api/v1/quotas/?lab=${labId}&month=${month}&page_size=100`)).body.results
    assert.ok(quotas.length, 'the demo data has quotas for this month')
    const reason = `e2e site admin ${Date.now()}`
    const asked = await apiCall(bob.context, 'POST', '/api/v1/quota-requests/', {
      lab: labId, instance_type: quotas[0].instance_type, month: quotas[0].month, gpu_hours: '5', reason,
    })
    assert.equal(asked.status, 201, JSON.stringify(asked.body))

    await page.reload()
    await page.locator('[data-testid=quota-requests] td', { hasText: reason }).waitFor()
    // Vision Lab's quotas are among every lab's.
    await page.locator('[data-testid=quota-bar]').nth(quotas.length - 1).waitFor()
    await screenshot(page, 'quotas-site-admin')
    const rejected = await apiCall(carol.context, 'POST', `/api/v1/quota-requests/${asked.body.id}/reject/`, { reason: 'e2e' })
    assert.equal(rejected.status, 200)

    // `/labs` itself keeps her (it used to send a site admin to the dashboard), as does a lab's page.
    await page.goto('/labs')
    await page.locator('main h1').first().waitFor()
    assert.equal(new URL(page.url()).pathname, '/labs')
    await page.goto(`/labs/${labId}`)
    await page.locator('main h1').first().waitFor()
    assert.equal(new URL(page.url()).pathname, `/labs/${labId}`)
    await page.locator('[data-testid=lab-members] tbody tr').first().waitFor()
    const members = (await apiCall(carol.context, 'GET', `/api/v1/labs/${labId}/members/`)).body
    const shown = await page.locator('[data-testid=lab-members] tbody tr').count()
    assert.equal(shown, (members.results ?? members).length)
  })
  it('bug 11: after End now, Details, the node card and the ICS feed show the actual end', async () => {
    const alice = await signIn(browser, 'alice')
    const id = await readyBooking(alice.context, 'e2e end now')
    const feed = await apiCall(alice.context, 'POST', '/api/v1/feeds/', { kind: 'user', name: `e2e end now ${id}` })
    assert.equal(feed.status, 201, JSON.stringify(feed.body))
    cleanup.push(() => apiCall(alice.context, 'DELETE', `/api/v1/feeds/${feed.body.id}/`))

    const page = alice.page
    await page.goto(`/bookings/${id}`)
    await page.locator('[data-testid=ssh-command]').waitFor()
    page.once('dialog', (d) => d.accept())
    await page.locator('[data-testid=booking-end-early]').click()
    await page.locator('[data-app-confirm] [data-testid=confirm-ok]').click({ timeout: 2000 }).catch(() => {})
    await page.locator('[data-testid=booking-status][data-status=ending]').waitFor()

    const ended = (await apiCall(alice.context, 'GET', `/api/v1/bookings/${id}/`)).body
    assert.ok(ended.ended_at, 'the server recorded when it ended')
    // As the page formats instants: the profile's zone, the UI language.
    const endedText = new Intl.DateTimeFormat('en', { timeZone: (await me(alice.context)).timezone, dateStyle: 'medium', timeStyle: 'short' })
      .format(new Date(ended.ended_at))
    assert.ok((await page.locator('[data-testid=booking-end]').textContent()).includes(endedText))
    const endedLine = await page.locator('[data-testid=booking-ended]').textContent()
    assert.ok(endedLine.includes(`Ended at ${endedText} by alice`), endedLine)
    // Its node is going away: no SSH command, and no promise of one.
    const card = page.locator('[data-testid=booking-node]')
    assert.equal(await card.locator('[data-testid=ssh-command]').count(), 0)
    assert.doesNotMatch(await card.textContent(), /will appear/)

    // The teardown finishes (the workers' part, done here).
    django(`
from labgpu.bookings.models import Booking
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
Node.objects.filter(booking_id=${id}).update(status="destroyed", destroyed_at=now(), status_changed_at=now())
Booking.objects.filter(pk=${id}).update(status="completed", status_changed_at=now())
`)
    await page.reload()
    await page.locator('[data-testid=booking-status][data-status=completed]').waitFor()
    assert.match(await card.textContent(), /destroyed/i)
    assert.doesNotMatch(await card.textContent(), /will appear/)
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'booking-ended-early')

    // The calendar feed ends the event when the booking really ended.
    const ics = await (await fetch(feed.body.url)).text()
    const event = icsEvent(ics, id)
    assert.ok(event, `booking ${id} is in the feed`)
    const stamp = new Date(ended.ended_at).toISOString().replace(/[-:]/g, '')
    assert.match(event, new RegExp(`DTEND[^:]*:${stamp.slice(0, 15)}Z`))
  })
  it('bug 15: an email names the zone without ambiguity, in the reader’s language, and links to the booking', async () => {
    const alice = await signIn(browser, 'alice')
    const profile = await me(alice.context)
    assert.equal(profile.timezone, 'Asia/Shanghai') // the demo's alice reads Shanghai times, in Chinese
    const pool = (await listPools(alice.context)).find((p) => p.requires_approval)
    const window = await freeWindow(alice.context, pool, 120)
    const { id } = await book(alice.context, { pool: pool.id, start: window.start, end: window.end, purpose: 'e2e email' })
    cleanup.push(() => cancelBooking(alice.context, id))

    // Her lab admin approves it in the app; the approval email goes out at once.
    const bob = await signIn(browser, 'bob')
    await bob.page.goto('/approvals')
    const row = bob.page.locator(`[data-booking-id="${id}"]`)
    await row.locator('[data-testid=approve]').click()
    await row.waitFor({ state: 'detached' })
    const message = lastMailAbout(profile.email, id)
    assert.ok(message, 'alice was emailed about her booking')

    const start = wallTime(window.start, 'Asia/Shanghai').replace('T', ' ')
    assert.ok(message.body.includes(`${start}（Asia/Shanghai，UTC+08:00）`), message.body)
    assert.doesNotMatch(message.subject + message.body, /\bCST\b/)
    assert.match(message.subject, /已获批准/)
    const link = message.body.match(/https?:\/\/\S+\/bookings\/\d+/)?.[0]
    assert.equal(link, `${BASE_URL}/bookings/${id}`)

    // The link opens the booking.
    await alice.page.goto(link)
    await alice.page.locator('[data-testid=booking-status][data-status=scheduled]').waitFor()
  })
  it('bug 10: the first time the calendar shows free after a booking can be booked', async () => {
    const alice = await signIn(browser, 'alice')
    const { timezone } = await me(alice.context)
    const pool = (await listPools(alice.context)).find((p) => p.capacity === 1 && !p.requires_approval)
    // A morning in alice's zone: the booking and its changeover stay inside one day view (a
    // booking ending at midnight has its changeover on the next day's page). Four free hours: the
    // hour booked here, its changeover and the booking tried after it (other specs book this pool too).
    const window = await freeWindow(alice.context, pool, 240, randomMorning(timezone))
    const end = Date.parse(window.start) + 3_600_000
    const booked = await book(alice.context, { pool: pool.id, start: window.start, end: new Date(end).toISOString(), purpose: 'e2e changeover' })
    cleanup.push(() => cancelBooking(alice.context, booked.id))

    // The day view of that one-node pool: where does free time start again after the booking?
    const wall = wallTime(window.start, timezone)
    const page = alice.page
    await page.goto(`/calendar/${pool.id}?date=${wall.slice(0, 10)}&view=day&time=${wall.slice(11, 16)}`)
    const mine = page.locator('[data-testid=calendar] .ev-mine').first()
    await mine.waitFor()
    await page.waitForLoadState('networkidle')
    const booking = await mine.boundingBox()
    const perMinute = booking.height / 60
    const bands = await page.locator('[data-testid=calendar] .ev-changeover').evaluateAll((els) =>
      els.map((el) => el.getBoundingClientRect()).map((r) => ({ top: r.top, bottom: r.bottom })),
    )
    const bottom = booking.y + booking.height
    const busyUntil = Math.max(bottom, ...bands.filter((b) => Math.abs(b.top - bottom) < 3).map((b) => b.bottom))
    const shownFree = end + Math.round((busyUntil - bottom) / perMinute) * 60_000
    // The first whole slot of the grid that the calendar shows free …
    const step = pool.granularity_minutes * 60_000
    const slot = Math.ceil(shownFree / step) * step
    await screenshot(page, 'calendar-changeover')

    // … is one the server takes.
    const next = await apiCall(alice.context, 'POST', '/api/v1/bookings/', {
      pool: pool.id,
      lab: booked.lab.id,
      start: new Date(slot).toISOString(),
      end: new Date(slot + Math.max(pool.min_duration_minutes, 60) * 60_000).toISOString(),
      purpose: 'e2e right after',
    })
    if (next.status === 201) {
      cleanup.push(() => cancelBooking(alice.context, next.body.id))
    }
    assert.equal(next.status, 201, `the calendar showed ${new Date(slot).toISOString()} free: ${JSON.stringify(next.body)}`)
  })
  it('bug 12: a blackout over bookings lists them to the admin, emails their owners and lies over them on the calendar', async () => {
    const alice = await signIn(browser, 'alice')
    const pool = (await listPools(alice.context)).find((p) => !p.requires_approval && p.capacity > 1)
    const window = await freeWindow(alice.context, pool, 120)
    const { id } = await book(alice.context, { pool: pool.id, start: window.start, end: window.end, purpose: 'e2e under maintenance' })
    const reason = `e2e firmware ${Date.now()}`

    // Carol closes the pool over alice's booking, in her own time zone.
    const carol = await signIn(browser, 'carol')
    const carolZone = (await me(carol.context)).timezone
    const page = carol.page
    await page.goto('/blackouts')
    await page.selectOption('#blackout-pool', String(pool.id))
    await page.fill('#blackout-start', wallTime(new Date(Date.parse(window.start) - 3_600_000).toISOString(), carolZone))
    await page.fill('#blackout-end', wallTime(new Date(Date.parse(window.start) + 3_600_000).toISOString(), carolZone))
    await page.fill('#blackout-reason', reason)
    await page.click('[data-testid=blackout-submit]')
    const clash = page.locator(`[data-testid=blackout-clashes] tr[data-booking-id="${id}"]`)
    await clash.waitFor()
    assert.match(await clash.textContent(), /alice/)
    const blackout = (await apiCall(carol.context, 'GET', `/api/v1/blackouts/?pool=${pool.id}&page_size=100`)).body.results
      .find((b) => b.reason === reason)
    assert.ok(blackout, 'the blackout was created')
    cleanup.push(() => apiCall(carol.context, 'DELETE', `/api/v1/blackouts/${blackout.id}/`))
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'blackout-clashes')

    // Alice was told; her booking stays as it was until someone decides.
    const told = sentMail().find((m) => m.to.includes('alice@') && m.body.includes(reason))
    assert.ok(told, 'alice was emailed about the maintenance')
    assert.match(told.body, bookingPath(id))
    assert.equal((await apiCall(alice.context, 'GET', `/api/v1/bookings/${id}/`)).body.status, 'scheduled')

    // Her calendar shows the maintenance over her booking, with its reason.
    const wall = wallTime(window.start, (await me(alice.context)).timezone)
    await alice.page.goto(`/calendar/${pool.id}?date=${wall.slice(0, 10)}&view=day&time=${wall.slice(11, 16)}`)
    await alice.page.locator('[data-testid=calendar] .ev-mine').first().waitFor()
    await alice.page.locator('[data-testid=calendar-blackouts]', { hasText: reason }).waitFor()
    const [hatch, booking] = await Promise.all(
      ['.ev-blackout', '.ev-mine'].map((sel) =>
        alice.page.locator(`[data-testid=calendar] ${sel}`).first().evaluate((el) => Number(getComputedStyle(el).zIndex) || 0),
      ),
    )
    assert.ok(hatch > booking, `the hatching (z-index ${hatch}) lies over the booking (${booking})`)
    await screenshot(alice.page, 'calendar-blackout-over-booking')

    // Carol cancels it from the list, through the app's own dialog; it is audited.
    await clash.locator('[data-testid=blackout-cancel-booking]').click()
    await page.locator('[data-app-confirm] [data-testid=confirm-ok]').click()
    await page.getByText('Booking cancelled.').waitFor()
    assert.equal((await apiCall(alice.context, 'GET', `/api/v1/bookings/${id}/`)).body.status, 'cancelled')
    const audit = (await apiCall(carol.context, 'GET', `/api/v1/audit/?action=booking.force_end&target_id=${id}`)).body
    assert.equal((audit.results ?? audit).length, 1)
  })
  it('bug 1: a stuck node shows its time in state and the provider’s last error; site admins retry or destroy it', async () => {
    const alice = await signIn(browser, 'alice')
    const { id } = await bookNow(alice.context, { purpose: 'e2e stuck' })
    // The lifecycle starts it and the provider never answers (the demo emulator on another port):
    // the create is retried with the provider's error recorded, for 8 minutes now.
    const nodeId = Number(djangoValue(`
from datetime import timedelta
from labgpu.core.timeutils import now
from labgpu.providers import ProviderTransientError
from labgpu.provisioning.models import Node
from labgpu.provisioning.services import nodes
from labgpu.provisioning.services.sweeps import booking_start
booking_start(booking_id=${id})
node = Node.objects.get(booking_id=${id})
Node.objects.filter(pk=node.pk).update(status="creating", status_changed_at=now() - timedelta(minutes=8))
nodes.node_record_error(node_id=node.pk, error=ProviderTransientError("connection refused: http://127.0.0.1:8010/v2/droplets"))
print(node.pk)
`))

    await alice.page.goto(`/bookings/${id}`)
    const stuck = alice.page.locator('[data-testid=node-stuck]')
    await stuck.waitFor()
    assert.match(await stuck.textContent(), /Creating for (8|9|10) minutes, longer than expected/)
    assert.match(await stuck.textContent(), /connection refused/)
    await screenshot(alice.page, 'booking-node-stuck')

    const carol = await signIn(browser, 'carol')
    const page = carol.page
    await page.goto('/nodes')
    const row = page.locator(`[data-node-id="${nodeId}"]`)
    await row.locator('[data-testid=node-stuck]').waitFor()
    assert.match(await row.locator('[data-testid=node-in-state]').textContent(), /(8|9|10) minutes/)
    assert.match(await row.locator('[data-testid=node-last-error]').textContent(), /connection refused/)
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'nodes-stuck')

    await row.locator('[data-testid=node-retry]').click()
    await page.locator('[data-app-confirm] [data-testid=confirm-ok]').click()
    await page.getByText(`labgpu-node-${nodeId}: retrying now.`).waitFor()
    await row.locator('[data-testid=node-destroy]').click()
    await page.locator('[data-app-confirm] [data-testid=confirm-ok]').click()
    await page.getByText(`labgpu-node-${nodeId} is being destroyed.`).waitFor()

    const node = (await apiCall(carol.context, 'GET', `/api/v1/nodes/${nodeId}/`)).body
    assert.equal(node.status, 'failed')
    assert.match(node.failure_reason, /carol/)
    for (const action of ['node.retry', 'node.destroy']) {
      const audit = (await apiCall(carol.context, 'GET', `/api/v1/audit/?action=${action}&target_id=${nodeId}`)).body
      assert.equal((audit.results ?? audit).length, 1, action)
    }
  })
})

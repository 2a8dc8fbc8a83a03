// Issue 25 item 2: a full window's booking form lets a member join its waitlist; when the booking
// that fills it is cancelled the first in line is offered the slot (held for them), told in the
// app and by mail, and takes the offer on the waitlist page. Checked against the API's rows.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { apiCall, book, cancelBooking, djangoValue, freeWindow, listPools, me, screenshot, sentMail, seriousViolations, signIn, submitForm, useBrowser, wallTime } from './support.mjs'

describe('waitlist (issue 25)', () => {
  const { browser, cleanup } = useBrowser()

  it('joins the waitlist of a full window from the booking form and takes the offer', async () => {
    const alice = await signIn(browser, 'alice')
    const bob = await signIn(browser, 'bob')
    // A one-node pool nobody waits for already (the demo's erin waits for the H200).
    const waited = new Set(
      JSON.parse(djangoValue('import json; from labgpu.waitlist.models import WaitlistEntry as W; print(json.dumps(list(W.objects.filter(status__in=W.ACTIVE_STATUSES).exclude(pool=None).values_list("pool_id", flat=True))))')),
    )
    const pool = (await listPools(alice.context)).find((p) => p.capacity === 1 && !p.requires_approval && !waited.has(p.id))
    assert.ok(pool, 'the demo data has a one-node pool without waiters')
    const window = await freeWindow(alice.context, pool, 60)
    const held = await book(alice.context, { pool: pool.id, start: window.start, end: window.end, purpose: 'e2e waitlist: fills the window' })
    let cancelled = false
    cleanup.push(async () => {
      if (!cancelled) await cancelBooking(alice.context, held.id)
    })

    // bob asks for the same hour: full, so the form offers the waitlist beside the next free times.
    const { timezone } = await me(bob.context)
    const page = bob.page
    await page.goto(`/bookings/new?pool=${pool.id}`)
    await page.fill('#booking-start', wallTime(window.start, timezone))
    await page.fill('#booking-end', wallTime(window.end, timezone))
    await page.fill('#booking-purpose', 'e2e waitlist')
    const refused = await submitForm(page)
    assert.equal(refused.status, 409)
    assert.equal(refused.body.code, 'pool_full')
    await page.locator('[data-testid=waitlist-join]').waitFor()
    assert.deepEqual(await seriousViolations(page), [])
    const [joined] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/api/v1/waitlist/')),
      page.locator('[data-testid=waitlist-join-submit]').click(),
    ])
    assert.equal(joined.status(), 201)
    const entry = await joined.json()
    cleanup.push(() => apiCall(bob.context, 'POST', `/api/v1/waitlist/${entry.id}/leave/`))
    await page.locator('[data-testid=waitlist-joined]').waitFor()
    await screenshot(page, 'waitlist-joined')
    const row = (await apiCall(bob.context, 'GET', `/api/v1/waitlist/${entry.id}/`)).body
    assert.equal(row.status, 'waiting')
    assert.equal(row.pool, pool.id)
    assert.equal(row.earliest_start, new Date(window.start).toISOString().replace('.000Z', 'Z'))
    assert.equal(row.duration_minutes, 60)

    // alice cancels: the cancel's own transaction offers the slot to bob (no workers in the e2e
    // run), and the promotion the worker would then run, the backstop, finds nothing more.
    assert.equal((await cancelBooking(alice.context, held.id)).status, 200)
    cancelled = true
    const offered = JSON.parse(djangoValue(`from labgpu.waitlist.services import waitlist_promote; print(waitlist_promote(pool_id=${pool.id}))`))
    assert.deepEqual(offered, [])
    const offer = (await apiCall(bob.context, 'GET', `/api/v1/waitlist/${entry.id}/`)).body
    assert.equal(offer.status, 'offered')
    const heldFor = (await apiCall(bob.context, 'GET', `/api/v1/bookings/${offer.booking}/`)).body
    assert.equal(heldFor.status, 'offered')
    assert.equal(heldFor.start, row.earliest_start)
    // Told in the app and by mail (bob reads Chinese).
    const notes = (await apiCall(bob.context, 'GET', '/api/v1/notifications/?page_size=20')).body.results
    assert.ok(notes.some((n) => n.booking === offer.booking), JSON.stringify(notes.slice(0, 3)))
    assert.ok(sentMail().some((m) => m.to.includes('bob@') && m.subject.includes(pool.name) && m.subject.includes('空闲')))

    // bob takes it on the waitlist page.
    await page.goto('/waitlist')
    const item = page.locator(`[data-testid=waitlist-entry][data-entry-id="${entry.id}"]`)
    await item.and(page.locator('[data-status=offered]')).waitFor()
    await item.locator('[data-testid=waitlist-expires]').waitFor()
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'waitlist-offer')
    await item.locator('[data-testid=waitlist-accept]').click()
    await page.locator(`[data-testid=waitlist-entry][data-entry-id="${entry.id}"][data-status=booked]`).waitFor()
    const taken = (await apiCall(bob.context, 'GET', `/api/v1/bookings/${offer.booking}/`)).body
    assert.equal(taken.status, 'scheduled')
    cleanup.push(() => cancelBooking(bob.context, offer.booking))
    await page.locator('[data-testid=waitlist-booking-link]').first().waitFor()
  })

  it('joins the waitlist for any pool of the GPU model instead of the one pool', async () => {
    const alice = await signIn(browser, 'alice')
    const bob = await signIn(browser, 'bob')
    const pool = (await listPools(alice.context)).find((p) => p.capacity === 1 && !p.requires_approval)
    assert.ok(pool, 'the demo data has a one-node pool')
    const model = pool.instance_type_detail.gpu_model
    const window = await freeWindow(alice.context, pool, 60)
    const held = await book(alice.context, { pool: pool.id, start: window.start, end: window.end, purpose: 'e2e waitlist by model: fills the window' })
    cleanup.push(() => cancelBooking(alice.context, held.id))

    const { timezone } = await me(bob.context)
    const page = bob.page
    await page.goto(`/bookings/new?pool=${pool.id}`)
    await page.fill('#booking-start', wallTime(window.start, timezone))
    await page.fill('#booking-end', wallTime(window.end, timezone))
    assert.equal((await submitForm(page)).status, 409)
    const choice = page.locator('[data-testid=waitlist-for]')
    await choice.waitFor()
    assert.match(await choice.innerText(), new RegExp(model))
    await page.locator('[data-testid=waitlist-for-model]').check()
    assert.deepEqual(await seriousViolations(page), [])
    const [joined] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/api/v1/waitlist/')),
      page.locator('[data-testid=waitlist-join-submit]').click(),
    ])
    assert.equal(joined.status(), 201)
    const entry = await joined.json()
    cleanup.push(() => apiCall(bob.context, 'POST', `/api/v1/waitlist/${entry.id}/leave/`))
    // The row the API keeps: any pool of the model, not the pool the form was on.
    const row = (await apiCall(bob.context, 'GET', `/api/v1/waitlist/${entry.id}/`)).body
    assert.equal(row.status, 'waiting')
    assert.equal(row.pool, null)
    assert.equal(row.gpu_model, model)
    assert.equal(row.duration_minutes, 60)

    await page.goto('/waitlist')
    const item = page.locator(`[data-testid=waitlist-entry][data-entry-id="${entry.id}"]`)
    await item.waitFor()
    assert.match(await item.innerText(), new RegExp(model))
    await screenshot(page, 'waitlist-by-model')
  })
})

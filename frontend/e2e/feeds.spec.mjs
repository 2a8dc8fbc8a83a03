// Calendar feeds: a user creates an ICS subscription, sees its secret URL once, a calendar app
// (no cookies) can fetch it, and revoking it closes it at once; all from the keyboard.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import {
  BASE_URL, apiCall, nativeDialogs, screenshot, seriousViolations, settle, signIn, tabTo, useBrowser,
} from './support.mjs'

/** What a calendar app does: a plain GET of the URL, without the browser's session. */
async function subscribe(url) {
  const response = await fetch(url, { headers: { Accept: 'text/calendar, */*' } })
  return { status: response.status, type: response.headers.get('content-type') ?? '', body: await response.text() }
}

const FEED_URL = /\/api\/v1\/feeds\/lgf_([0-9a-f]+)_[A-Za-z0-9_-]+\.ics$/

describe('calendar feeds', () => {
  const { browser, cleanup } = useBrowser()

  it('a user creates a feed of their bookings, sees the URL once, subscribes and revokes it (keyboard only)', async () => {
    const alice = await signIn(browser, 'alice')
    await alice.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE_URL })
    const page = alice.page
    await page.goto('/feeds')
    await settle(page)
    await page.getByRole('heading', { level: 1, name: 'Calendar feeds' }).waitFor()
    assert.equal(await page.locator('#feed-kind-user').isChecked(), true)

    await tabTo(page, '[data-testid=feed-submit]')
    await page.keyboard.press('Enter')
    const box = page.locator('[data-testid=feed-created]')
    await box.waitFor()
    // Focus moves to the one-time URL; the copy button is the next stop.
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'feed-created')
    const url = (await box.locator('[data-testid=feed-url]').textContent()).trim()
    assert.ok(url.startsWith(`${BASE_URL}/api/v1/feeds/`), url)
    const prefix = url.match(FEED_URL)?.[1]
    assert.ok(prefix, `unexpected feed URL ${url}`)
    assert.match(await box.textContent(), /Google Calendar.*Outlook.*Apple Calendar/s)
    await page.keyboard.press('Tab')
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'feed-copy')
    await page.keyboard.press('Enter')
    await page.getByText('Copied to the clipboard').waitFor()
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), url)

    const feed = (await apiCall(alice.context, 'GET', '/api/v1/feeds/')).body.find((f) => f.prefix === prefix)
    assert.ok(feed, 'the new feed is listed by the API')
    cleanup.push(() => apiCall(alice.context, 'DELETE', `/api/v1/feeds/${feed.id}/`))
    assert.equal(feed.kind, 'user')
    const row = page.locator(`[data-feed-id="${feed.id}"]`)
    await row.waitFor()
    assert.match(await row.textContent(), new RegExp(`My bookings.*lgf_${prefix}….*Active`, 's'))
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'feeds-created')

    const ics = await subscribe(url)
    assert.equal(ics.status, 200)
    assert.match(ics.type, /^text\/calendar/)
    assert.match(ics.body, /BEGIN:VCALENDAR/)
    assert.match(ics.body, /END:VCALENDAR/)

    // Shown once: after a reload only the prefix is left.
    await page.reload()
    await settle(page)
    await row.waitFor()
    assert.equal(await page.locator('[data-testid=feed-created]').count(), 0)
    assert.ok(!(await page.content()).includes(url.match(/lgf_[A-Za-z0-9_-]+/)[0]))

    // The app's own dialog asks (never the browser's confirm()), its button focused: Enter confirms.
    const native = nativeDialogs(page)
    await tabTo(page, `[data-feed-id="${feed.id}"] [data-testid=feed-revoke]`)
    await page.keyboard.press('Enter')
    const question = page.locator('[data-app-confirm] #app-confirm-message')
    await question.waitFor()
    assert.match(await question.textContent(), /Revoke this feed\?/)
    await page.keyboard.press('Enter')
    await page.locator(`[data-feed-id="${feed.id}"][data-revoked=true]`).waitFor()
    assert.deepEqual(native, [])
    assert.match(await row.locator('[data-testid=feed-status]').textContent(), /Revoked/)
    assert.equal(await row.locator('[data-testid=feed-revoke]').count(), 0)
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'feeds-revoked')

    assert.equal((await subscribe(url)).status, 404)
    await alice.context.close()
  })

  it('a feed of one pool is picked from the pools the user can see', async () => {
    const alice = await signIn(browser, 'alice')
    const page = alice.page
    await page.goto('/feeds')
    await settle(page)
    await page.check('#feed-kind-pool')
    const select = page.locator('#feed-pool')
    await select.waitFor()
    const options = await select.locator('option:not([disabled])').allTextContents()
    assert.ok(options.length > 0, 'the demo data has pools Alice can see')
    await select.selectOption({ label: options[0] })
    assert.deepEqual(await seriousViolations(page), [])
    await page.click('[data-testid=feed-submit]')
    const url = (await page.locator('[data-testid=feed-url]').textContent()).trim()
    const prefix = url.match(FEED_URL)?.[1]
    const feed = (await apiCall(alice.context, 'GET', '/api/v1/feeds/')).body.find((f) => f.prefix === prefix)
    cleanup.push(() => apiCall(alice.context, 'DELETE', `/api/v1/feeds/${feed.id}/`))
    assert.equal(feed.kind, 'pool')
    assert.equal(feed.pool_name, options[0].trim())
    await page.locator(`[data-feed-id="${feed.id}"]`, { hasText: options[0].trim() }).waitFor()
    const ics = await subscribe(url)
    assert.equal(ics.status, 200)
    assert.match(ics.body, /BEGIN:VCALENDAR/)
    await screenshot(page, 'feeds-pool')
    await alice.context.close()
  })
})

// Issue 24 ([spa-truth]): the app says what is true. Each test checks what the page shows against
// what the server holds (the API's answer), in both languages where words matter.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'

import { apiCall, book, cancelBooking, freeWindow, listPools, personIn, signIn, useBrowser } from './support.mjs'

const messages = {
  en: JSON.parse(readFileSync(new URL('../src/i18n/en.json', import.meta.url), 'utf8')),
  'zh-CN': JSON.parse(readFileSync(new URL('../src/i18n/zh-CN.json', import.meta.url), 'utf8')),
}
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
})

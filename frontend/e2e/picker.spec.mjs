// Issue 14 (zh-CN): date and time fields follow the app's language, not the browser's. With the
// browser in en-US and the app in Chinese, the booking form reads `2026-11-30 15:00` (year first,
// 24-hour), never `11/30/2026, 03:00 PM`, and what is typed is booked in the profile's time zone.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import {
  apiCall, cancelBooking, freeWindow, listPools, me, openedBookingId, personIn, screenshot, useBrowser, wallTime,
} from './support.mjs'

const ZH_WALL = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/

describe('date and time fields follow the app language (issue 14)', () => {
  const { browser, cleanup } = useBrowser()

  /** alice, her browser in en-US (whose native pickers say AM/PM) and the app in zh-CN. */
  async function aliceInChinese() {
    return personIn(browser, 'alice', { lang: 'zh-CN', locale: 'en-US' })
  }

  it('in zh-CN the booking start reads year-first 24-hour and books the typed wall time in the profile zone', async () => {
    const { context, page } = await aliceInChinese()
    const pool = (await listPools(context)).find((p) => !p.requires_approval)
    assert.ok(pool, 'the demo data has a pool without approval')
    const { timezone } = await me(context)
    const window = await freeWindow(context, pool, 120)

    await page.goto(`/bookings/new?pool=${pool.id}`)
    const start = page.locator('#booking-start')
    await start.waitFor()
    // The field tells its format in Chinese, and "start now" fills it in that format.
    assert.match(await start.getAttribute('placeholder'), /年-月-日 时:分/)
    await page.click('[data-testid=booking-start-now]')
    await page.waitForFunction(() => document.querySelector('#booking-start')?.value)
    const filled = await start.inputValue()
    assert.match(filled, ZH_WALL, `start now shows ${filled}`)
    assert.doesNotMatch(filled, /AM|PM|上午|下午/)

    // The calendar popup speaks Chinese (weekday and month names) and picks in the same format.
    await page.locator('#booking-start ~ [data-testid=date-picker-toggle]').click()
    const popup = page.locator('[data-testid=date-picker-popup]')
    const weekdays = popup.locator('.dp--calendar-header-item')
    await weekdays.first().waitFor()
    const names = (await weekdays.allInnerTexts()).join(' ')
    assert.match(names, /[一二三四五六日]/, `weekday names: ${names}`)
    assert.doesNotMatch(names, /Mo|Tu|We|Su/)
    assert.match(await popup.innerText(), /月/)
    assert.doesNotMatch(await popup.innerText(), /\bAM\b|\bPM\b/)
    await popup.locator('.dp--cell-inner:not(.dp--cell-offset)', { hasText: /^15$/ }).first().click()
    await page.waitForFunction(() => /^\d{4}-\d{2}-15 \d{2}:\d{2}$/.test(document.querySelector('#booking-start')?.value ?? ''))
    await screenshot(page, 'booking-form-zh-CN-calendar')
    await page.locator('#booking-start ~ [data-testid=date-picker-toggle]').click()
    await popup.waitFor({ state: 'detached' })

    // Type the chosen local time the way a Chinese user reads it (space, 24-hour).
    const startWall = wallTime(window.start, timezone).replace('T', ' ')
    const endWall = wallTime(window.end, timezone).replace('T', ' ')
    await start.fill(startWall)
    await page.locator('#booking-end').fill(endWall)
    await page.fill('#booking-purpose', `e2e picker ${Date.now()}`)
    assert.equal(await start.inputValue(), startWall)
    assert.equal(await start.evaluate((el) => el.validity.valid), true)
    await page.locator('[data-testid=availability] .ok').waitFor()
    await screenshot(page, 'booking-form-zh-CN-datetime')
    await page.click('[data-testid=booking-submit]')
    const id = await openedBookingId(page)
    cleanup.push(() => cancelBooking(context, id))

    // The server's record, in UTC, is the instant the profile zone's clock read what was typed.
    const { body } = await apiCall(context, 'GET', `/api/v1/bookings/${id}/`)
    assert.equal(new Date(body.start).toISOString(), new Date(window.start).toISOString())
    assert.equal(new Date(body.end).toISOString(), new Date(window.end).toISOString())
    await context.close()
  })

  it('in zh-CN a malformed date is refused by the field with a Chinese message', async () => {
    const { context, page } = await aliceInChinese()
    await page.goto('/bookings/new')
    const start = page.locator('#booking-start')
    await start.fill('11/30/2026, 03:00 PM')
    const message = await start.evaluate((el) => el.validationMessage)
    assert.match(message, /请按/)
    await start.fill('2026-02-30 10:00')
    assert.equal(await start.evaluate((el) => el.validity.valid), false, 'February 30th is not a date')
    await start.fill('2026-11-30T15:00')
    assert.equal(await start.evaluate((el) => el.validity.valid), true, 'the native value form is still accepted')
    await context.close()
  })
})

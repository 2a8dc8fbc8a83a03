// The usage page against the real usage API (issue 14 bug 7): days are the profile zone's days on
// the server and in the page, and the range asked for is whole local days, even across a
// daylight-saving change. Usage is written straight into the database (what the meter records),
// then read back through the page.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { django, me, signIn, useBrowser } from './support.mjs'

/** `YYYY-MM-DD` of the UTC day `n` days ago. */
const utcDay = (n) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10)

describe('usage (issue 14 bug 7)', () => {
  const { browser } = useBrowser()

  it('two hours across midnight UTC land on two Shanghai days (server and page), the axis starts at "From"', async () => {
    const { context, page } = await signIn(browser, 'alice')
    assert.equal((await me(context)).timezone, 'Asia/Shanghai')
    // 15:00–17:00 UTC is 23:00–01:00 in Shanghai: an hour on each of two local days. Counted in
    // UTC the two hours would fall on one day. 8 GPUs: 8 GPU-hours a day.
    const day = utcDay(10)
    const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10)
    django(`
from datetime import datetime, timedelta
from labgpu.accounts.models import User
from labgpu.catalog.models import NodePool
from labgpu.demo.history import _booking, _node, _usage
from labgpu.bookings.models import Booking
from labgpu.provisioning.models import Node
from labgpu.usage.models import UsageRecord
# A re-run on the same database replaces its record instead of adding a second one.
UsageRecord.objects.filter(booking__purpose__endswith="e2e across midnight").delete()
Node.objects.filter(booking__purpose__endswith="e2e across midnight").delete()
Booking.objects.filter(purpose__endswith="e2e across midnight").delete()
alice = User.objects.get(username="alice")
pool = NodePool.objects.get(slug="mi325x8-atl1")
start = datetime.fromisoformat("${day}T15:00:00+00:00")
end = start + timedelta(hours=2)
booking = _booking(user=alice, pool=pool, start=start, end=end, slot=0, purpose="e2e across midnight")
_usage(node=_node(booking=booking, attempt=1, start=start, end=end), start=start, end=end, charged=True)
`)
    await page.goto('/usage')
    await page.locator('[data-testid=usage-stacked] [data-testid=bar-chart]').waitFor()
    const from = await page.locator('#usage-from').inputValue()
    const firstLabel = page.locator('[data-testid=usage-stacked] [data-testid=x-label]').first()
    assert.equal(await firstLabel.getAttribute('data-day'), from, 'the x-axis starts at "From"')

    const segment = (d) => page.locator(`[data-testid=usage-stacked] [data-day="${d}"] .segment[title*="MI325X"]`)
    for (const d of [day, next]) {
      const title = await segment(d).getAttribute('title')
      assert.match(title, /: 8 /, `${d}: ${title}`)
    }
    await context.close()
  })

  it('the range asked for is whole days of the profile zone, also across a daylight-saving change', async () => {
    // carol lives in Europe/Berlin; summer time ends on Sunday 25 October 2026 (a 25-hour day).
    const { context, page } = await signIn(browser, 'carol')
    assert.equal((await me(context)).timezone, 'Europe/Berlin')
    await page.goto('/usage')
    await page.locator('[data-testid=usage-stacked] h2').waitFor()
    const asked = page.waitForRequest((r) => r.url().includes('/api/v1/usage/?') && r.url().includes('start=2026-10-19'))
    await page.fill('#usage-to', '2026-10-25')
    await page.fill('#usage-from', '2026-10-20')
    const url = new URL((await asked).url())
    assert.equal(url.searchParams.get('start'), '2026-10-19T22:00:00.000Z', '20 October 00:00 CEST')
    assert.equal(url.searchParams.get('end'), '2026-10-25T23:00:00.000Z', '26 October 00:00 CET: all of the 25-hour day')
    await context.close()
  })

  it('on a phone (390×844) the day labels under the bars never overlap, in English and in Chinese', async () => {
    const { context, page } = await signIn(browser, 'alice')
    await page.setViewportSize({ width: 390, height: 844 })
    for (const [locale, sample] of [['en', /^\d{1,2}\/\d{1,2}$/], ['zh-CN', /^\d{1,2}\/\d{1,2}$/]]) {
      await page.evaluate((l) => localStorage.setItem('labgpu.locale', l), locale)
      await page.goto('/usage')
      await page.locator('[data-testid=usage-stacked] [data-testid=bar-chart]').waitFor()
      const labels = page.locator('[data-testid=usage-stacked] [data-testid=x-label]')
      const texts = await labels.allTextContents()
      assert.ok(texts.length >= 2, `${locale}: some day labels: ${texts}`)
      assert.ok(texts.every((t) => sample.test(t)), `${locale}: short dates of the locale: ${texts}`)
      const boxes = await labels.evaluateAll((els) => els.map((e) => e.getBoundingClientRect()).map((r) => ({ left: r.left, right: r.right })))
      for (let i = 1; i < boxes.length; i++) {
        assert.ok(boxes[i].left >= boxes[i - 1].right + 2, `${locale}: label ${i} (${texts[i]}) overlaps ${texts[i - 1]}`)
      }
      const card = await page.locator('[data-testid=usage-stacked]').boundingBox()
      assert.ok(boxes.at(-1).right <= card.x + card.width, `${locale}: the last label stays inside its card`)
    }
    await page.evaluate(() => localStorage.setItem('labgpu.locale', 'en'))
    await context.close()
  })
})

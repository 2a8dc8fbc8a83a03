// Money in the app (issue 26 items 1, 4, 5, 6): a site admin sees the provider's price beside the
// site's adjustment and changes it; a lab admin reads last month's statement and downloads its
// PDF, in English and in Chinese, with a converted amount labelled with its rate and date. The
// statement's total is checked against the ledger's own rows (summed in the database).
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'

import { django, djangoValue, personIn, useBrowser } from './support.mjs'

const now = new Date()
const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 7)

/** Write 3 h 7 min of bob's use into last month (what the meter records), once per database. */
function seedLastMonth() {
  django(`
from datetime import datetime, timedelta
from labgpu.accounts.models import User
from labgpu.catalog.models import NodePool
from labgpu.demo.history import _booking, _node, _usage
from labgpu.bookings.models import Booking
if not Booking.objects.filter(purpose__endswith="e2e statement").exists():
    bob = User.objects.get(username="bob")
    pool = NodePool.objects.get(slug="mi300x-tor1")
    start = datetime.fromisoformat("${lastMonth}-12T08:00:00+00:00")
    end = start + timedelta(hours=3, minutes=7)
    booking = _booking(user=bob, pool=pool, start=start, end=end, slot=0, purpose="e2e statement")
    _usage(node=_node(booking=booking, attempt=1, start=start, end=end), start=start, end=end, charged=True)
`)
}

/** The lab's charges of last month as the database sums its ledger rows (no statement code). */
function ledgerTotal(labId) {
  return djangoValue(`
from decimal import Decimal
from django.db.models import Sum
from django.db.models.functions import Round
from labgpu.usage.models import StorageUsage, UsagePeriod
from labgpu.statements.selectors import month_bounds
from datetime import date
start, end = month_bounds(date.fromisoformat("${lastMonth}-01"))
gpu = UsagePeriod.objects.filter(record__lab_id=${labId}, record__charged_to_lab=True, started_at__gte=start, started_at__lt=end).aggregate(s=Sum("cost"))["s"] or Decimal(0)
per_volume = StorageUsage.objects.filter(lab_id=${labId}, started_at__gte=start, started_at__lt=end).values("volume_id").annotate(c=Round(Sum("cost"), 2))
print(f"{gpu + sum((v['c'] for v in per_volume), Decimal(0)):.2f}")
`)
}

describe('money: prices, statements, display currency (issue 26)', () => {
  const { browser } = useBrowser()
  // Other specs see amounts in USD only again (the browser is closed by now: through Django).
  after(() => {
    django('from labgpu.pricing.models import DisplayCurrency; DisplayCurrency.objects.create(code="")')
  })

  it('the catalog shows the provider price beside the adjustment, and a discount changes what labs pay', async () => {
    const { context, page } = await personIn(browser, 'carol')
    await page.goto('/catalog')
    const row = page.locator('[data-testid=prices] tbody tr', { hasText: 'gpu-mi300x1-192gb' }).first()
    await row.waitFor()
    const provider = (await row.locator('[data-testid=provider-price]').textContent()).match(/\$([0-9.]+)/)[1]
    await row.locator('[data-testid=adjustment-input]').fill('-10')
    await row.locator('[data-testid=adjustment-save]').click()
    const expected = (Number(provider) * 0.9).toFixed(5)
    await page.locator('[data-testid=prices] tbody tr', { hasText: 'gpu-mi300x1-192gb' }).first()
      .locator('[data-testid=lab-price]', { hasText: `$${expected}` }).waitFor()
    // Audited, then put back (other specs' prices stay as the demo made them).
    assert.equal(djangoValue('from labgpu.audit.models import AuditEvent; print(AuditEvent.objects.filter(action="price.adjustment", actor__username="carol").exists())'), 'True')
    await row.locator('[data-testid=adjustment-input]').fill('0')
    await row.locator('[data-testid=adjustment-save]').click()
    await page.locator('[data-testid=prices] tbody tr', { hasText: 'gpu-mi300x1-192gb' }).first()
      .locator('[data-testid=lab-price]', { hasText: `$${Number(provider).toFixed(5)}` }).waitFor()
    // A display currency needs its date: the error names it.
    await page.selectOption('#currency-code', 'CNY')
    await page.fill('#currency-rate', '7.1234')
    await page.click('[data-testid=currency-save]')
    await page.locator('[data-testid=currency-error]').waitFor()
    await page.fill('#currency-date', '2026-11-30')
    await page.click('[data-testid=currency-save]')
    await page.locator('[data-testid=display-currency-now]', { hasText: '7.1234' }).waitFor()
    await context.close()
  })

  for (const [lang, title, converted] of [['en', 'Monthly statement', 'rate of 2026-11-30'], ['zh-CN', '月度账单', '2026-11-30 的汇率']]) {
    it(`bob reads last month's statement and downloads its PDF (${lang})`, async () => {
      seedLastMonth()
      const { context, page } = await personIn(browser, 'bob', { lang })
      await page.goto('/usage')
      const panel = page.locator('[data-testid=statement]')
      await panel.locator('h2', { hasText: title }).waitFor()
      assert.equal(await page.locator('#statement-month').inputValue(), lastMonth)
      const labId = Number(await page.locator('#statement-lab').inputValue())
      const total = await panel.locator('[data-testid=statement-total]').textContent()
      assert.equal(total.trim(), `USD ${ledgerTotal(labId)}`)
      assert.notEqual(total.trim(), 'USD 0.00', 'the seeded use is on it')
      await panel.locator('[data-testid=statement-converted]', { hasText: converted }).waitFor()
      const href = await panel.locator('[data-testid=statement-pdf]').getAttribute('href')
      const pdf = await context.request.get(href)
      assert.equal(pdf.status(), 200)
      assert.equal(pdf.headers()['content-type'], 'application/pdf')
      assert.equal((await pdf.body()).subarray(0, 5).toString(), '%PDF-')
      await context.close()
    })
  }
})

// Budgets in the browser (issue 26 item 6) against the real API and the demo data: the Language
// Lab sits near its soft monthly budget (seed_demo), so dave's dashboard shows its bar; bob keeps
// the Vision Lab's cost centres and budget; alice's booking form preselects her default cost
// centre and sets the booking's cost against what the budget has left. Each runs in English and
// in Chinese, where the words are what the person reads: the texts below are the ones a reader
// of each language sees (the i18n catalogues' sentences, written out here, not looked up).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { apiCall, personIn, useBrowser } from './support.mjs'

const WORDS = {
  en: {
    dashboard: 'Budgets this period',
    left: (percent) => new RegExp(`left of .*\\(${percent} %\\)`),
    soft: 'soft',
    budgets: 'Budgets',
    saved: 'Budget saved',
    hard: 'hard',
    against: 'Cost against budget',
    overHard: 'over the budget: it will be refused',
  },
  'zh-CN': {
    dashboard: '本期预算',
    left: (percent) => new RegExp(`^剩余 .*，共 .*（${percent}%）$`),
    soft: '软性',
    budgets: '预算',
    saved: '预算已保存',
    hard: '硬性',
    against: '预算对照',
    overHard: '超出预算：将被拒绝',
  },
}

describe('budgets', () => {
  const { browser } = useBrowser()

  for (const [lang, words] of Object.entries(WORDS)) {
    it(`the dashboard shows the Language Lab's budget near its limit (${lang})`, async () => {
      const { context, page } = await personIn(browser, 'dave', { lang })
      await page.goto('/')
      await page.locator('h2', { hasText: words.dashboard }).waitFor()
      const bar = page.locator('[data-testid=budget-bar][data-scope="Language Lab"]')
      await bar.waitFor()
      const budgets = (await apiCall(context, 'GET', '/api/v1/budgets/')).body.results
      const percent = Number(budgets[0].percent)
      assert.ok(percent >= 70 && percent < 100, `the demo lab is near its budget: ${percent} %`)
      const left = (await bar.locator('[data-testid=budget-left]').textContent()).trim()
      assert.match(left, words.left(budgets[0].percent))
      assert.match(await bar.textContent(), new RegExp(words.soft))
      await context.close()
    })

    it(`a lab admin sets a budget; the member's booking form weighs the cost against it (${lang})`, async () => {
      const bob = await personIn(browser, 'bob', { lang })
      await bob.page.goto('/labs/budgets')
      await bob.page.locator('h1', { hasText: words.budgets }).waitFor()
      await bob.page.locator('[data-testid=cost-centres]').waitFor()
      await bob.page.locator('[data-testid=cost-centre-row]', { hasText: 'NSF-2231' }).waitFor()
      const existing = (await apiCall(bob.context, 'GET', '/api/v1/budgets/')).body.results
      for (const b of existing) await apiCall(bob.context, 'DELETE', `/api/v1/budgets/${b.id}/`)
      await bob.page.reload()
      // A hard budget of 1.00 USD: any booking of a GPU node costs more.
      await bob.page.fill('#budget-new-amount', '1.00')
      await bob.page.selectOption('#budget-new-enforcement', 'hard')
      await bob.page.click('[data-testid=budget-create]')
      await bob.page.getByText(words.saved).first().waitFor()
      const row = bob.page.locator('[data-testid=budget-row]').first()
      await row.waitFor()
      assert.match(await row.textContent(), new RegExp(words.hard))
      const made = (await apiCall(bob.context, 'GET', '/api/v1/budgets/')).body.results
      assert.equal(made.length, 1)
      assert.equal(made[0].amount, '1.00')
      assert.equal(made[0].enforcement, 'hard')

      const alice = await personIn(browser, 'alice', { lang })
      await alice.page.goto('/bookings/new')
      const select = alice.page.locator('[data-testid=booking-cost-centre]')
      await select.waitFor()
      const chosen = await select.locator('option:checked').textContent()
      assert.match(chosen, /NSF-2231/)
      await alice.page.locator('dt', { hasText: words.against }).waitFor()
      const budgetRow = alice.page.locator('[data-testid=budget-left-row]').first()
      await budgetRow.locator('.bad', { hasText: words.overHard }).waitFor()
      await apiCall(bob.context, 'DELETE', `/api/v1/budgets/${made[0].id}/`)
      await alice.context.close()
      await bob.context.close()
    })
  }
})

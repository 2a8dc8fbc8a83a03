// A lab admin asks for more quota, a site admin approves, and the lab's quota bar moves.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { screenshot, signIn, useBrowser } from './support.mjs'

function totalOf(text) {
  // "250 of 400 GPU-hours left" → 400
  const numbers = text.replace(/,/g, '').match(/[\d.]+/g)
  return Number(numbers?.[1])
}

describe('quota', () => {
  const { browser } = useBrowser()

  it('an approved quota request moves the quota bar', async () => {
    const bob = await signIn(browser, 'bob')
    const page = bob.page
    await page.goto('/quotas')
    await page.locator('[data-testid=quota-request-form]').waitFor()
    await page.locator('[data-testid=quota-bar]').first().waitFor()
    const typeName = (await page.locator('#qr-type option:checked').textContent()).trim()
    const bar = page.locator(`[data-testid=quota-bar][data-label$="· ${typeName}"]`).first()
    const label = await bar.getAttribute('data-label')
    const before = totalOf(await bar.locator('[data-testid=quota-remaining]').textContent())

    const reason = `e2e quota ${Date.now()}`
    await page.fill('#qr-hours', '100')
    await page.fill('#qr-reason', reason)
    await page.click('[data-testid=qr-submit]')
    await page.locator('[data-testid=quota-requests] td', { hasText: reason }).waitFor()

    const carol = await signIn(browser, 'carol')
    await carol.page.goto('/approvals')
    const row = carol.page.locator('[data-testid=pending-quota-requests] tr', { hasText: reason })
    await row.waitFor()
    await screenshot(carol.page, 'approvals-quota-request')
    await row.locator('[data-testid=approve]').click()
    await row.waitFor({ state: 'detached' })
    await carol.context.close()

    await page.reload()
    const after = page.locator(`[data-testid=quota-bar][data-label="${label}"] [data-testid=quota-remaining]`)
    await after.waitFor()
    assert.equal(totalOf(await after.textContent()), before + 100)
    await screenshot(page, 'quotas-after-approval')
  })
})

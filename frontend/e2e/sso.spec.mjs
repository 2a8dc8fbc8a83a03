// Single sign-on (issue 16 items 1 and 6) in Chromium against a real OpenID Provider that
// scripts/run-e2e.sh starts on loopback (backend/labgpu/sso/tests/op): the login page's button in
// both languages, the round trip through the provider's sign-in and consent pages back to the deep
// link, memberships from the groups claim, and logout that ends the provider's session too.
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'

import { BASE_URL, anonymous, apiCall, me, screenshot, signIn, useBrowser } from './support.mjs'

const ISSUER = process.env.E2E_OIDC_ISSUER

describe('single sign-on with OpenID Connect', { skip: ISSUER ? false : 'no test OpenID Provider (Node missing)' }, () => {
  const { browser } = useBrowser()
  before(async () => {
    // Carol (site admin) maps the groups-claim value dana has to the vision lab: an OIDC mapping
    // (of the configured issuer, compared exactly; issue 22).
    const carol = await signIn(browser, 'carol')
    const labs = (await apiCall(carol.context, 'GET', '/api/v1/labs/')).body.results
    const vision = labs.find((l) => l.slug === 'vision')
    const made = await apiCall(carol.context, 'POST', '/api/v1/sso/group-mappings/', {
      source: 'oidc',
      group: 'vision-members',
      lab: vision.id,
      role: 'member',
    })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    await carol.context.close()
  })

  it('shows the provider button in Chinese', async () => {
    const { context, page } = await anonymous(browser, 'zh-CN')
    await page.goto('/login')
    await page.getByTestId('sso-oidc').waitFor()
    assert.equal((await page.getByTestId('sso-oidc').innerText()).trim(), '通过Test University登录')
    await context.close()
  })

  it('signs in through the provider and lands on the deep link, signed in with lab membership', async () => {
    const { context, page } = await anonymous(browser)
    await page.goto('/bookings')
    await page.waitForURL(/\/login\?next=(%2F|\/)bookings/)
    await page.getByTestId('sso-oidc').click()

    // The provider's own pages (oidc-provider's development sign-in and consent).
    await page.waitForURL((url) => url.href.startsWith(ISSUER))
    await page.locator('input[name=login]').fill('dana')
    await page.locator('input[name=password]').fill('any password the provider accepts')
    await page.locator('button[type=submit]').click()
    await page.locator('input[name=prompt][value=consent]').waitFor({ state: 'attached' })
    await page.locator('button[type=submit]').click()

    await page.waitForURL(`${BASE_URL}/bookings`)
    await page.getByTestId('profile-link').waitFor()
    assert.equal((await page.getByTestId('profile-link').innerText()).trim(), 'dana')
    const dana = await me(context)
    assert.equal(dana.email, 'dana@uni.example')
    assert.equal(dana.timezone, 'Asia/Shanghai')
    assert.deepEqual(dana.memberships.map((m) => m.lab.slug), ['vision'])
    await screenshot(page, 'sso-signed-in')

    // Sign out: LabGPU's session ends, then the provider's (RP-initiated logout), back to /login.
    await page.getByTestId('logout').click()
    await page.waitForURL((url) => url.href.startsWith(`${ISSUER}/session/end`))
    await page.locator('button[name=logout]').click()
    await page.waitForURL(`${BASE_URL}/login`)
    assert.equal((await apiCall(context, 'GET', '/api/v1/me/')).status, 401)
    await context.close()
  })
})

// Every main page: it loads, axe finds nothing serious or critical, and a screenshot is kept.
// The language switcher and the browser-language default are checked here too.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { BASE_URL, screenshot, seriousViolations, settle, signIn, useBrowser } from './support.mjs'

describe('pages', () => {
  const { browser } = useBrowser()

  it('the login page follows the browser language by default', async () => {
    const context = await browser.newContext({ baseURL: BASE_URL, locale: 'zh-CN' })
    const page = await context.newPage()
    await page.goto('/login')
    await page.getByLabel('用户名').waitFor()
    assert.equal(await page.getAttribute('html', 'lang'), 'zh-CN')
    await screenshot(page, 'login-zh-CN')
    await context.close()
  })

  it('the language switch changes the page, and the choice sticks', async () => {
    const context = await browser.newContext({ baseURL: BASE_URL, locale: 'en-US' })
    const page = await context.newPage()
    await page.goto('/login')
    await page.getByLabel('Username').waitFor()
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'login')
    await page.selectOption('[data-testid=locale-switcher]', 'zh-CN')
    await page.getByLabel('用户名').waitFor()
    assert.equal(await page.textContent('[data-testid=login-submit]'), '登录')
    await page.reload()
    await page.getByLabel('用户名').waitFor()
    await page.selectOption('[data-testid=locale-switcher]', 'en')
    await page.getByLabel('Username').waitFor()
    await context.close()
  })

  const pages = [
    ['alice', '/', 'dashboard'],
    ['alice', '/calendar', 'calendar'],
    ['alice', '/bookings', 'bookings'],
    ['alice', '/bookings/new', 'booking-form'],
    ['alice', '/quotas', 'quotas'],
    ['alice', '/tokens', 'tokens'],
    ['alice', '/feeds', 'feeds'],
    ['alice', '/profile', 'profile'],
    ['bob', '/approvals', 'approvals-lab-admin'],
    ['bob', '/labs', 'lab-members'],
    ['bob', '/usage', 'usage'],
    ['carol', '/nodes', 'nodes'],
    ['carol', '/directory-groups', 'group-mappings'],
    ['carol', '/approvals', 'approvals-site-admin'],
  ]
  for (const [user, path, name] of pages) {
    it(`${path} as ${user} has no serious or critical axe violations`, async () => {
      const { context, page } = await signIn(browser, user)
      await page.goto(path)
      await settle(page)
      await page.locator('main h1').first().waitFor()
      if (name === 'calendar') await page.locator('[data-testid=calendar] .ec').waitFor()
      assert.deepEqual(await seriousViolations(page), [])
      await screenshot(page, name)
      await context.close()
    })
  }

  it('the first frame a page paints holds the header and the page together (no bare shell first)', async () => {
    const { context, page } = await signIn(browser, 'alice')
    // At the first change under #app, the frame the browser then paints (a requestAnimationFrame
    // runs after every microtask of that change, right before the paint).
    await context.addInitScript(() => {
      new MutationObserver((_, observer) => {
        if (!document.querySelector('#app > *')) return
        observer.disconnect()
        requestAnimationFrame(() => {
          window.__firstFrame = {
            header: !!document.querySelector('[data-testid=logout]'),
            heading: document.querySelector('main h1')?.textContent ?? null,
          }
        })
      }).observe(document, { childList: true, subtree: true })
    })
    for (const [path, heading] of [['/', /Alice/], ['/bookings', /bookings/i], ['/quotas', /quota/i]]) {
      await page.goto(path)
      await page.waitForFunction(() => window.__firstFrame !== undefined)
      const first = await page.evaluate(() => window.__firstFrame)
      assert.equal(first.header, true, `${path}: the header is in the first frame`)
      assert.match(first.heading ?? '', heading, `${path}: the page's heading is in the first frame`)
    }
    await context.close()
  })

  it("the dashboard's code and first read start with its HTML, and are fetched once", async () => {
    const { context, page } = await signIn(browser, 'alice')
    // The server's preloads name the URLs the SPA asks (core/views.py FIRST_PAGE_PRELOADS): one
    // that no request takes is fetched a second time by the page, and arrives late.
    const asked = []
    page.on('request', (request) => asked.push(new URL(request.url()).pathname + new URL(request.url()).search))
    await page.goto('/')
    await page.getByTestId('upcoming-bookings').getByTestId('booking-table').waitFor()
    await page.waitForLoadState('networkidle')
    const preloaded = await page.$$eval('head link[rel=preload], head link[rel=modulepreload]', (links) =>
      links.map((l) => new URL(l.href).pathname + new URL(l.href).search),
    )
    const bookingsRead = preloaded.filter((url) => url.startsWith('/api/v1/bookings/'))
    assert.equal(bookingsRead.length, 1, `the dashboard's bookings read is preloaded: ${preloaded.join(', ')}`)
    assert.ok(preloaded.some((url) => /^\/assets\/dashboard-shared-.*\.js$/.test(url)), `its chunk is preloaded: ${preloaded.join(', ')}`)
    // The page asks for its bookings with exactly that URL, and the preload's answer serves it.
    assert.deepEqual(asked.filter((url) => url.startsWith('/api/v1/bookings/')), bookingsRead)
    for (const url of preloaded) {
      assert.equal(asked.filter((a) => a === url).length, 1, `${url} is fetched once (asked: ${asked.join(', ')})`)
    }
    // A page that is not the dashboard preloads none of it (its HTML as the server sends it).
    const elsewhere = await (await context.request.get('/quotas')).text()
    assert.doesNotMatch(elsewhere, /href="\/api\/v1\/bookings\/|dashboard-shared/)
    await context.close()
  })

  it('switching language after sign-in translates the whole shell', async () => {
    const { context, page } = await signIn(browser, 'alice')
    await page.selectOption('[data-testid=locale-switcher]', 'zh-CN')
    await page.getByRole('link', { name: '概览' }).waitFor()
    await page.goto('/calendar')
    await page.getByRole('heading', { name: '日历' }).waitFor()
    await screenshot(page, 'calendar-zh-CN')
    await page.selectOption('[data-testid=locale-switcher]', 'en')
    await page.getByRole('heading', { name: 'Calendar' }).waitFor()
    await context.close()
  })
})

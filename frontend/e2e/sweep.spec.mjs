// Every route of the router, for whoever may open it, in both languages and at desktop and phone
// size (issue 14, sweep): no page scrolls sideways on a 390 px phone, and axe finds no serious or
// critical violation. The list of pages comes from the running SPA's own router, so a route added
// later is swept without touching this file.
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'

import { BASE_URL, apiCall, screenshot, seriousViolations, sidewaysOverflow, signIn, useBrowser } from './support.mjs'

// `make screenshots` (E2E_SCREENSHOT_DIR set) keeps these pages in docs/screenshots, per language
// and size: the ones that show the product with the demo's weeks of history.
const SHOWCASE = new Set(['dashboard', 'calendar', 'usage', 'nodes', 'approvals', 'booking-detail'])

const DESKTOP = { width: 1440, height: 900 }
const PHONE = { width: 390, height: 844 }

/** The router's records as the SPA has them: path, name and who may open it (meta). */
async function routerRoutes(page) {
  await page.goto('/')
  await page.waitForFunction(() => document.querySelector('#app')?.__vue_app__)
  return page.evaluate(() =>
    document
      .querySelector('#app')
      .__vue_app__.config.globalProperties.$router.getRoutes()
      .map((r) => ({ path: r.path, name: String(r.name ?? r.path), public: !!r.meta.public, role: r.meta.role ?? null })),
  )
}

/**
 * A URL for each route: optional parameters left out, required ones filled with a real record the
 * person may see (`samples`, by parameter name). A required parameter with no sample fails the test
 * and names the route, so a new route with a new kind of id gets a sample here.
 */
function concretePath(path, samples, missing) {
  if (path.startsWith('/:pathMatch')) return '/no-such-page'
  return path
    .replace(/\/:(\w+)(\([^)]*\))?\?/g, '')
    .replace(/:(\w+)(\([^)]*\))?/g, (_, name) => {
      if (samples[name] === undefined) missing.push(`${path} (:${name})`)
      return String(samples[name] ?? 1)
    })
}

/** Who opens a route: nobody for public pages, carol (site admin) for admin pages, else alice. */
const personFor = (route) => (route.public ? null : route.role ? 'carol' : 'alice')

// Two sizes × languages at a time, each in its own contexts: most of a page's time is waiting for
// its requests to settle, which overlaps; axe's work does not, so more than two gains nothing here.
describe('sweep: every route, both languages, desktop and phone (issue 14)', { concurrency: 2 }, () => {
  const { browser } = useBrowser()
  let plan // [{ who, path }]
  const storage = {}
  before(async () => {
    for (const who of ['alice', 'carol']) {
      const { context } = await signIn(browser, who)
      storage[who] = await context.storageState()
      await context.close()
    }
    const context = await browser.newContext({ baseURL: BASE_URL, storageState: storage.carol })
    const page = await context.newPage()
    const routes = await routerRoutes(page)
    const mine = (await apiCall(context, 'GET', '/api/v1/bookings/?page_size=1')).body.results[0]
    const pool = (await apiCall(context, 'GET', '/api/v1/pools/?page_size=1')).body.results[0]
    const lab = (await apiCall(context, 'GET', '/api/v1/labs/?page_size=1')).body.results?.[0]
    await context.close()
    // alice sees her own bookings only: take one of hers for the detail page.
    const aliceContext = await browser.newContext({ baseURL: BASE_URL, storageState: storage.alice })
    const hers = (await apiCall(aliceContext, 'GET', '/api/v1/bookings/?mine=true&page_size=1')).body.results[0]
    await aliceContext.close()
    const samples = { id: hers?.id ?? mine?.id, poolId: pool?.id, labId: lab?.id, token: 'not-a-real-invitation' }
    const missing = []
    plan = routes.map((r) => ({ who: personFor(r), path: concretePath(r.path, samples, missing), name: r.name }))
    console.log(`sweeping ${plan.length} routes: ${plan.map((p) => `${p.who ?? 'anonymous'} ${p.path}`).join(', ')}`)
    assert.deepEqual(missing, [], 'routes with a required parameter this sweep has no sample for')
    // The sweep must cover what the brief names, whatever else the router grows.
    for (const path of ['/', '/blackouts', '/nodes', '/profile', '/tokens', '/login']) {
      assert.ok(plan.some((p) => p.path === path), `the router has no ${path}`)
    }
    assert.ok(plan.some((p) => /^\/bookings\/\d+$/.test(p.path)), 'a booking detail page is swept')
  })

  /** Open `path` as `who` and wait for its heading and data. */
  async function open(page, path) {
    await page.goto(path)
    await page.locator('h1').first().waitFor()
    await page.waitForLoadState('networkidle')
  }

  async function contextFor(who, viewport, locale) {
    const context = await browser.newContext({ baseURL: BASE_URL, viewport, ...(who ? { storageState: storage[who] } : {}) })
    await context.addInitScript((l) => localStorage.setItem('labgpu.locale', l), locale)
    return context
  }

  for (const locale of ['en', 'zh-CN']) {
    for (const [size, viewport] of [['390×844', PHONE], ['1440×900', DESKTOP]]) {
      it(`${size}, ${locale}: axe finds no serious or critical violation${viewport === PHONE ? ', and no page scrolls sideways' : ''}`, async () => {
        const problems = []
        for (const who of [null, 'alice', 'carol']) {
          const context = await contextFor(who, viewport, locale)
          const page = await context.newPage()
          for (const { path, name } of plan.filter((p) => p.who === who)) {
            await open(page, path)
            const label = `${who ?? 'anonymous'} ${path}`
            // Landed where it should (a guard bounced the person elsewhere = the sweep missed it).
            const landed = new URL(page.url()).pathname
            if (landed !== path) problems.push(`${label}: redirected to ${landed}`)
            if (viewport === PHONE) {
              const wide = await sidewaysOverflow(page)
              if (wide.px > 0) problems.push(`${label}: ${wide.px} px too wide (${wide.culprits.join(', ')})`)
            }
            for (const v of await seriousViolations(page)) problems.push(`${label}: ${v}`)
            if (process.env.E2E_SCREENSHOT_DIR && SHOWCASE.has(name)) {
              await screenshot(page, `${name}-${locale}-${viewport === PHONE ? 'phone' : 'desktop'}`)
            }
          }
          await context.close()
        }
        assert.deepEqual(problems, [])
      })
    }
  }
})

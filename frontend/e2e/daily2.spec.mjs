// More daily-use bugs of issue 14 ([spa-daily]): static assets, the phone, durations, usage,
// the week view, zh-CN and accessibility. Each test checks what the server sent or what the page
// shows, never a value the SPA computed about itself.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import {
  BASE_URL, apiCall, firstLab, listPools, me, personIn, screenshot, sidewaysOverflow, signIn, useBrowser, wallTime,
} from './support.mjs'

/** The hashed scripts and style sheets index.html links to (Vite's `assets/<name>-<hash>.<ext>`). */
async function hashedAssets(context) {
  const html = await (await context.request.get(`${BASE_URL}/`)).text()
  return [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1])
}

/** Bytes that crossed the wire for each script of the page (CDP: encoded length, headers included). */
async function recordTransfers(page) {
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('Network.enable')
  const byId = new Map()
  const done = []
  cdp.on('Network.responseReceived', (e) => byId.set(e.requestId, { url: e.response.url, type: e.type, encoding: e.response.headers['content-encoding'] ?? e.response.headers['Content-Encoding'] }))
  cdp.on('Network.loadingFinished', (e) => {
    const r = byId.get(e.requestId)
    if (r) done.push({ ...r, bytes: e.encodedDataLength })
  })
  return done
}

/** Two days of usage of pool 1 by two labs, as the usage API answers with group_by lab/pool + day. */
function usageRows() {
  const day = (n) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10)
  return [
    { lab: 1, lab_name: 'Vision Lab', pool: 1, pool_name: 'Pool', day: day(2), gpu_hours: '12.00', cost: '23.88', seconds: 43200 },
    { lab: 2, lab_name: 'NLP Lab', pool: 1, pool_name: 'Pool', day: day(1), gpu_hours: '6.50', cost: '12.94', seconds: 23400 },
  ]
}

/** Health reports of one instance type with smoke results in three units (as agents send them). */
function healthReports() {
  const report = (id, daysAgo, tokens1, tokens128) => ({
    id, node: id, instance_type: 1, verdict: 'pass', collected_at: new Date(Date.now() - daysAgo * 86_400_000).toISOString(),
    created_at: new Date().toISOString(), findings: [], facts: {},
    smoke: [
      { name: 'llm', status: 'pass', metric: 'tokens_per_s_batch1', value: tokens1, unit: 'tokens/s', baseline: null, reason: null },
      { name: 'llm', status: 'pass', metric: 'tokens_per_s_batch128', value: tokens128, unit: 'tokens/s', baseline: null, reason: null },
      { name: 'matmul', status: 'pass', metric: 'bf16_tflops', value: 610, unit: 'TFLOP/s', baseline: null, reason: null },
      { name: 'membw', status: 'pass', metric: 'copy_gbps', value: 4100, unit: 'GB/s', baseline: null, reason: null },
    ],
  })
  return { baselines: {}, reports: [report(1, 3, 48, 5200), report(2, 1, 51, 5350)] }
}

/** Whether two client rectangles share any area. */
const overlaps = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height

const PHONE = { width: 390, height: 844 }

/** Every page of the app, for a site admin (who may open them all), with a real booking id. */
async function allRoutes(context) {
  const booking = (await apiCall(context, 'GET', '/api/v1/bookings/?page_size=1')).body.results[0]
  return ['/', '/calendar', '/bookings', '/bookings/new', ...(booking ? [`/bookings/${booking.id}`] : []), '/approvals', '/labs',
    '/quotas', '/usage', '/nodes', '/tokens', '/feeds', '/profile', '/no-such-page']
}

describe('daily use, part 2 (issue 14)', () => {
  const { browser } = useBrowser()

  it('bug 16: hashed assets are served compressed (brotli and gzip) and cached as immutable', async () => {
    const { context } = await signIn(browser, 'alice')
    const assets = await hashedAssets(context)
    assert.ok(assets.length > 0, 'index.html links no hashed assets')
    for (const path of assets) {
      for (const encoding of ['br', 'gzip']) {
        const response = await context.request.get(`${BASE_URL}${path}`, { headers: { 'Accept-Encoding': encoding } })
        assert.equal(response.status(), 200, path)
        assert.equal(response.headers()['content-encoding'], encoding, `${path} with Accept-Encoding: ${encoding}`)
        const cache = response.headers()['cache-control'] ?? ''
        assert.match(cache, /immutable/, `${path}: Cache-Control ${cache}`)
        assert.ok(Number(/max-age=(\d+)/.exec(cache)?.[1] ?? 0) >= 365 * 86_400, `${path}: Cache-Control ${cache}`)
      }
    }
    // index.html itself is not hashed: it must be revalidated, never cached as immutable.
    const index = await context.request.get(`${BASE_URL}/`)
    assert.doesNotMatch(index.headers()['cache-control'] ?? '', /immutable/)
    await context.close()
  })

  it('bug 16: the usage page, charts drawn, transfers at most 250 KB of scripts and styles', async () => {
    const { context, page } = await personIn(browser, 'carol')
    // The demo has no metered usage yet: answer the usage rows here so every chart draws.
    await page.route('**/api/v1/usage/?*', (route) => route.fulfill({ json: usageRows() }))
    await page.route('**/api/v1/instance-types/*/health/', (route) => route.fulfill({ json: healthReports() }))
    const transfers = await recordTransfers(page)
    await page.goto('/usage')
    for (const chart of ['usage-stacked', 'usage-heatmap', 'usage-throughput']) {
      await page.locator(`[data-testid=${chart}] figure`).first().waitFor()
    }
    await page.waitForLoadState('networkidle')
    const code = transfers.filter((t) => t.type === 'Script' || t.type === 'Stylesheet')
    const total = code.reduce((sum, t) => sum + t.bytes, 0)
    const detail = code.map((t) => `${new URL(t.url).pathname} ${t.bytes} B ${t.encoding ?? 'identity'}`).join('\n')
    assert.ok(code.length > 0, 'no scripts seen')
    assert.ok(total <= 250 * 1024, `usage page moved ${total} B of scripts and styles:\n${detail}`)
    await context.close()
  })

  it('bug 7: usage keeps batch-1 and batch-128 apart, one axis per unit, dates from "From" in the profile zone', async () => {
    // carol's profile zone is Europe/Berlin: local midnight is the previous day in UTC.
    const { context, page } = await signIn(browser, 'carol')
    await page.route('**/api/v1/usage/?*', (route) => route.fulfill({ json: usageRows() }))
    await page.route('**/api/v1/instance-types/*/health/', (route) => route.fulfill({ json: healthReports() }))
    await page.goto('/usage')
    const from = await page.locator('#usage-from').inputValue()

    const firstLabel = page.locator('[data-testid=usage-stacked] [data-testid=x-label]').first()
    assert.equal(await firstLabel.getAttribute('data-day'), from, 'the x-axis starts at "From"')

    const charts = page.locator('[data-testid=usage-throughput] [data-testid=line-chart]')
    await charts.first().waitFor()
    const units = await charts.evaluateAll((els) => els.map((e) => e.dataset.unit).sort())
    assert.deepEqual(units, ['GB/s', 'TFLOP/s', 'tokens/s'])
    const tokenLegend = await page.locator('[data-testid=line-chart][data-unit="tokens/s"] .legend li').allTextContents()
    assert.equal(tokenLegend.length, 2, `batch 1 and batch 128 are separate series: ${tokenLegend}`)
    assert.ok(tokenLegend.some((l) => l.includes('batch1')) && tokenLegend.some((l) => l.includes('batch128')), tokenLegend.join(', '))

    const legend = await page.locator('[data-testid=heatmap-legend]').boundingBox()
    for (const header of await page.locator('[data-testid=heatmap] th').all()) {
      const box = await header.boundingBox()
      if (box) assert.ok(!overlaps(legend, box), `the heat-map legend overlaps "${await header.textContent()}"`)
    }
    await screenshot(page, 'usage-charts')
    await context.close()
  })

  for (const locale of ['en', 'zh-CN']) {
    it(`bug 13: at 390×844 no page scrolls sideways (${locale})`, async () => {
      const wide = []
      const visit = async (page, who, path) => {
        await page.goto(path)
        await page.locator('main h1').first().waitFor()
        await page.waitForLoadState('networkidle')
        const { px, culprits } = await sidewaysOverflow(page)
        if (px > 0) wide.push(`${who} ${path}: ${px} px too wide (${culprits.join(', ')})`)
      }
      // alice has bookings of her own: her dashboard, list and booking detail have the most rows.
      const { context: alice, page: alicePage } = await personIn(browser, 'alice', { lang: locale, viewport: PHONE })
      const mine = (await apiCall(alice, 'GET', '/api/v1/bookings/?mine=true&page_size=1')).body.results[0]
      for (const path of ['/', '/bookings', ...(mine ? [`/bookings/${mine.id}`] : [])]) await visit(alicePage, 'alice', path)
      await alice.close()
      const { context, page } = await personIn(browser, 'carol', { lang: locale, viewport: PHONE })
      for (const path of await allRoutes(context)) await visit(page, 'carol', path)
      await page.context().clearCookies()
      await page.goto('/login')
      await page.locator('[data-testid=login-form]').waitFor()
      const login = await sidewaysOverflow(page)
      if (login.px > 0) wide.push(`/login: ${login.px} px too wide (${login.culprits.join(', ')})`)
      assert.deepEqual(wide, [], `pages wider than the ${PHONE.width} px screen`)
      await context.close()
    })
  }

  it('bug 13: on a phone the header is one row with a menu, and the form shows cost and availability above Book', async () => {
    const { context, page } = await personIn(browser, 'alice', { viewport: PHONE })
    await page.goto('/bookings/new')
    const header = page.locator('header').first()
    const menu = header.getByRole('button', { name: 'Menu' })
    assert.equal(await menu.getAttribute('aria-expanded'), 'false')
    const nav = header.getByRole('navigation')
    assert.equal(await nav.getByRole('link', { name: 'My bookings' }).isVisible(), false, 'the links hide behind the menu')
    assert.ok((await header.boundingBox()).height <= 64, `header is ${(await header.boundingBox()).height} px tall`)
    await menu.click()
    assert.equal(await menu.getAttribute('aria-expanded'), 'true')
    await nav.getByRole('link', { name: 'My bookings' }).click()
    await page.waitForURL('**/bookings')
    assert.equal(await menu.getAttribute('aria-expanded'), 'false', 'following a link closes the menu')

    await page.goto('/bookings/new')
    await page.locator('[data-testid=booking-submit]').waitFor()
    // Measured in one frame: the form grows while its figures load (budget, cost centre), so two
    // boxes read moments apart can compare a moved element with one that has not moved yet.
    const ys = await page.evaluate(() => Object.fromEntries(['availability', 'estimate-cost', 'booking-submit']
      .map((id) => [id, document.querySelector(`[data-testid=${id}]`).getBoundingClientRect().y])))
    for (const id of ['availability', 'estimate-cost']) {
      assert.ok(ys[id] < ys['booking-submit'], `${id} (y ${ys[id]}) is below the Book button (y ${ys['booking-submit']})`)
    }
    await screenshot(page, 'phone-booking-form')
    await context.close()
  })

  it('bug 14: durations speak hours, too long is refused before submit, a nonsense year is an error', async () => {
    const { context, page } = await signIn(browser, 'alice')
    const countMine = async () => (await apiCall(context, 'GET', '/api/v1/bookings/?mine=true&page_size=1')).body.count
    const before = await countMine()
    await page.goto('/bookings/new')
    await page.waitForFunction(() => document.querySelector('#booking-pool')?.value)
    const poolId = Number(await page.locator('#booking-pool').inputValue())
    const pool = (await listPools(context)).find((p) => p.id === poolId)
    const maxHours = (pool.max_duration_minutes ?? 10_080) / 60
    const start = new Date(Date.now() + 5 * 86_400_000)
    start.setUTCHours(8, 0, 0, 0)
    const end = new Date(start.getTime() + (maxHours + 24) * 3_600_000)
    const tz = (await me(context)).timezone
    await page.fill('#booking-start', wallTime(start.toISOString(), tz))
    await page.fill('#booking-end', wallTime(end.toISOString(), tz))

    // Flagged before submit, in hours as the hint says, never in minutes.
    const endError = page.locator('[data-testid=field-error][data-field=booking-end]')
    await endError.waitFor()
    assert.match(await endError.textContent(), new RegExp(`(?<![\\d.])${maxHours}\\s*h`))
    assert.doesNotMatch(await endError.textContent(), /minute/)
    assert.match(await page.locator('[data-testid=summary-duration]').textContent(), /too long/i)
    await page.click('[data-testid=booking-submit]')
    await page.locator('[data-testid=form-error]').waitFor()
    assert.equal(await countMine(), before, 'nothing was booked')

    // The server's own message speaks hours too, in alice's profile language (the API answers in it).
    const api = await apiCall(context, 'POST', '/api/v1/bookings/', {
      pool: poolId, lab: await firstLab(context), start: start.toISOString(), end: end.toISOString(),
    })
    assert.equal(api.status, 400)
    const hoursWord = (await me(context)).language?.startsWith('zh') ? '小时' : 'hours'
    assert.match(api.body.message, new RegExp(`(?<![\\d.])${maxHours} ${hoursWord}`))

    // A year typed with six digits is a clear error, not "0 h".
    await page.locator('#booking-end').evaluate((el) => {
      el.value = `202610${el.value.slice(4)}`
      el.dispatchEvent(new Event('input', { bubbles: true }))
    })
    await page.locator('[data-testid=field-error][data-field=booking-end]', { hasText: /valid date/i }).waitFor()
    assert.doesNotMatch(await page.locator('[data-testid=summary-duration]').textContent(), /^\s*0 h/)
    await context.close()
  })
})

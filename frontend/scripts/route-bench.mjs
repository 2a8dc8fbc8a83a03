// Bytes that cross the wire and time to content per route, from a live LabGPU serving the built
// SPA (bench/spa_performance.sh starts one), in Debian's Chromium with a cold cache, at full speed
// and with the CPU slowed 4× (CDP Emulation.setCPUThrottlingRate). Prints JSON; fails when a
// budget of issue 14 is missed: ≤ 120 KB of compressed JS before the first paint of any route,
// ≤ 250 KB in total for the usage page, dashboard content ≤ 1 s at 4× slowdown.
//   E2E_BASE_URL=http://127.0.0.1:8000 node scripts/route-bench.mjs [--runs 3] [--user alice] [--route /]
import { parseArgs } from 'node:util'

import { BASE_URL, launch, signIn } from '../e2e/support.mjs'

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    user: { type: 'string', default: 'alice' },
    // Only these paths (repeatable), e.g. `--route /` to compare two builds of the dashboard.
    route: { type: 'string', multiple: true },
  },
})
const RUNS = Number(values.runs)
// Each route with the element that means "its content is there" (data drawn, not a spinner).
const ROUTES = [
  // The dashboard's main content is my bookings; the quota panel fills in after (timed apart).
  {
    path: '/',
    content: '[data-testid=upcoming-bookings] :is([data-testid=booking-table], .empty)',
    secondary: '[data-testid=dashboard-quotas] :is([data-testid=quota-bar], .empty)',
  },
  { path: '/calendar', content: '[data-testid=calendar] .ec-body' },
  { path: '/usage', content: '[data-testid=usage-stacked] :is(figure, .empty)' },
  { path: '/bookings', content: 'main h1' },
  { path: '/bookings/new', content: 'main form' },
  { path: '/quotas', content: 'main h1' },
  { path: '/profile', content: 'main form' },
]
// The pages whose request waterfall is printed (the ones with a time-to-content budget to meet).
const WATERFALL = new Set(['/', '/calendar', '/usage'])
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

const browser = await launch()
const signedIn = await signIn(browser, values.user)
const storageState = await signedIn.context.storageState()
await signedIn.context.close()

async function measure(route, rate) {
  const context = await browser.newContext({ baseURL: BASE_URL, viewport: { width: 1440, height: 900 }, storageState })
  // The page tells us when its content is there through a CDP binding (Runtime.addBinding): a
  // waitForFunction would first compile Playwright's injected script on the page's main thread
  // (43–82 ms at 4×), which the page's `load` event puts before the content: the bench's own
  // work, measured as the app's.
  const keys = new Set(['__contentAt', ...(route.secondary ? ['__secondaryAt'] : [])])
  let arrived
  const allThere = new Promise((resolve) => (arrived = resolve))
  await context.exposeBinding('__benchReached', (_source, key) => {
    keys.delete(key)
    if (keys.size === 0) arrived()
  })
  await context.addInitScript(([content, secondary]) => {
    // The moment each selector first matches, on the page's own clock.
    const when = (selector, key) =>
      new MutationObserver((_, observer) => {
        if (document.querySelector(selector)) {
          window[key] = performance.now()
          observer.disconnect()
          window.__benchReached(key)
        }
      }).observe(document, { childList: true, subtree: true })
    when(content, '__contentAt')
    if (secondary) when(secondary, '__secondaryAt')
  }, [route.content, route.secondary])
  const page = await context.newPage()
  const cdp = await context.newCDPSession(page)
  await cdp.send('Network.enable')
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true })
  await cdp.send('Emulation.setCPUThrottlingRate', { rate })
  const types = new Map()
  const started = new Map()
  const finished = []
  let t0 = null
  cdp.on('Network.requestWillBeSent', (e) => {
    t0 ??= e.timestamp
    started.set(e.requestId, { url: e.request.url, at: e.timestamp })
  })
  cdp.on('Network.responseReceived', (e) => types.set(e.requestId, e.type))
  cdp.on('Network.loadingFinished', (e) => {
    const s = started.get(e.requestId)
    finished.push({
      type: types.get(e.requestId),
      bytes: e.encodedDataLength,
      id: e.requestId,
      // The request waterfall: what was asked when, relative to the document request (ms).
      path: s ? new URL(s.url).pathname + new URL(s.url).search : '?',
      startMs: s ? Math.round((s.at - t0) * 1000) : null,
      endMs: Math.round((e.timestamp - t0) * 1000),
    })
  })
  await page.goto(route.path, { waitUntil: 'commit' })
  let timer
  await Promise.race([
    allThere,
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${route.path}: no content in 60 s`)), 60_000))),
  ])
  clearTimeout(timer)
  await page.waitForLoadState('networkidle')
  const timing = await page.evaluate(() => {
    const fcp = performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Infinity
    const js = performance.getEntriesByType('resource').filter((r) => r.initiatorType === 'script' || r.name.endsWith('.js'))
    return {
      contentMs: window.__contentAt,
      secondaryMs: window.__secondaryAt,
      fcpMs: fcp,
      jsBeforePaint: js.filter((r) => r.responseEnd <= fcp).reduce((sum, r) => sum + r.transferSize, 0),
    }
  })
  await context.close()
  const sum = (pred) => finished.filter(pred).reduce((s, r) => s + r.bytes, 0)
  return {
    ...timing,
    waterfall: finished
      .sort((a, b) => a.startMs - b.startMs)
      .map((r) => `${String(r.startMs).padStart(5)}–${String(r.endMs).padStart(5)} ms ${String(r.bytes).padStart(7)} B ${r.type} ${r.path}`),
    totalBytes: sum(() => true),
    jsBytes: sum((r) => r.type === 'Script'),
    codeBytes: sum((r) => r.type === 'Script' || r.type === 'Stylesheet'),
  }
}

const results = []
for (const rate of [1, 4]) {
  for (const route of ROUTES.filter((r) => !values.route || values.route.includes(r.path))) {
    const runs = []
    for (let i = 0; i < RUNS; i++) runs.push(await measure(route, rate))
    results.push({
      route: route.path,
      cpuSlowdown: rate,
      contentMs: Math.round(median(runs.map((r) => r.contentMs))),
      // Every run's, in order: the spread says as much as the median on a 2-core machine.
      contentRunsMs: runs.map((r) => Math.round(r.contentMs)),
      ...(route.secondary ? { secondaryPanelsMs: Math.round(median(runs.map((r) => r.secondaryMs))) } : {}),
      firstPaintMs: Math.round(median(runs.map((r) => r.fcpMs))),
      jsBeforePaintKB: +(median(runs.map((r) => r.jsBeforePaint)) / 1024).toFixed(1),
      jsKB: +(median(runs.map((r) => r.jsBytes)) / 1024).toFixed(1),
      codeKB: +(median(runs.map((r) => r.codeBytes)) / 1024).toFixed(1),
      totalKB: +(median(runs.map((r) => r.totalBytes)) / 1024).toFixed(1),
      // The last run's requests in order (bytes are the compressed bytes on the wire).
      ...(WATERFALL.has(route.path) ? { waterfall: runs[runs.length - 1].waterfall } : {}),
    })
  }
}
await browser.close()

const failures = []
for (const r of results) {
  if (r.jsBeforePaintKB > 120) failures.push(`${r.route}: ${r.jsBeforePaintKB} KB of JS before first paint (budget 120)`)
  if (r.route === '/usage' && r.totalKB > 250) failures.push(`/usage: ${r.totalKB} KB in total (budget 250)`)
  if (r.route === '/' && r.cpuSlowdown === 4 && r.contentMs > 1000) failures.push(`dashboard content at ${r.contentMs} ms with 4× CPU slowdown (budget 1000)`)
}
console.log(JSON.stringify({ runs: RUNS, user: values.user, results, failures }, null, 2))
if (failures.length) process.exit(1)

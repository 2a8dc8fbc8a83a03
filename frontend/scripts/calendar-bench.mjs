// Month view of one pool with N bookings, rendered in Debian's Chromium from the built SPA, with
// the API answered in the page (no backend): prints JSON and fails above the budget.
//   npm run build && node scripts/calendar-bench.mjs [--bookings 1000] [--runs 5] [--budget-ms 500]
import { createReadStream, existsSync, statSync } from 'node:fs'
import { createServer } from 'node:http'
import { extname, join } from 'node:path'
import { parseArgs } from 'node:util'

import { chromium } from 'playwright-core'

const { values } = parseArgs({
  options: {
    bookings: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '5' },
    'budget-ms': { type: 'string', default: '500' },
  },
})
const N = Number(values.bookings)
const RUNS = Number(values.runs)
const BUDGET = Number(values['budget-ms'])
const dist = new URL('../dist/', import.meta.url).pathname
if (!existsSync(join(dist, 'index.html'))) throw new Error('build first: npm run build')

const types = { '.js': 'text/javascript', '.css': 'text/css', '.html': 'text/html', '.svg': 'image/svg+xml' }
const server = createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname)
  let file = join(dist, path)
  if (!file.startsWith(dist) || !existsSync(file) || statSync(file).isDirectory()) file = join(dist, 'index.html')
  res.writeHead(200, { 'Content-Type': types[extname(file)] ?? 'application/octet-stream' })
  createReadStream(file).pipe(res)
})
await new Promise((r) => server.listen(0, '127.0.0.1', r))
const base = `http://127.0.0.1:${server.address().port}`

// One pool of capacity 8 and N bookings spread over December 2026, a quarter of them ours.
const month = { start: Date.parse('2026-12-01T00:00:00Z'), end: Date.parse('2027-01-01T00:00:00Z') }
const busy = Array.from({ length: N }, (_, i) => {
  const start = month.start + Math.floor(((month.end - month.start - 4 * 3600_000) * i) / N)
  return {
    start: new Date(start).toISOString(),
    end: new Date(start + (1 + (i % 4)) * 3600_000).toISOString(),
    status: 'scheduled',
    mine: i % 4 === 0,
    booking: i % 2 === 0 ? i + 1 : null,
    lab: i % 2 === 0 ? { id: 1, name: 'Vision Lab', slug: 'vision' } : null,
  }
})
const instanceType = { id: 1, name: 'AMD MI300X ×1', slug: 'mi300x-1', provider_account: 1, provider_size: 'gpu-mi300x1-192gb', gpu_vendor: 'amd', gpu_model: 'MI300X', gpu_count: 1, vram_gb_per_gpu: 192, gpu_arch: 'gfx942', price_per_hour: '1.99' }
const page1 = (results) => ({ count: results.length, next: null, previous: null, results })
const api = {
  '/api/v1/me/': { id: 1, username: 'bench', email: '', first_name: 'Bench', last_name: '', timezone: 'UTC', language: 'en', is_site_admin: false, memberships: [{ id: 1, lab: { id: 1, name: 'Vision Lab', slug: 'vision' }, role: 'member' }] },
  '/api/v1/pools/': page1([{ id: 1, name: 'MI300X ×1 · tor1', slug: 'p', instance_type: 1, instance_type_detail: instanceType, region: 'tor1', capacity: 8, granularity_minutes: 30, requires_approval: false }]),
  '/api/v1/instance-types/': page1([instanceType]),
  '/api/v1/labs/': page1([{ id: 1, name: 'Vision Lab', slug: 'vision', my_role: 'member', created_at: '2026-01-01T00:00:00Z' }]),
  '/api/v1/blackouts/': page1([]),
  '/api/v1/pools/1/busy/': busy,
}

const browser = await chromium.launch({
  executablePath: process.env.E2E_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
})
const timings = []
try {
  for (let run = 0; run < RUNS; run++) {
    const context = await browser.newContext({ baseURL: base, viewport: { width: 1280, height: 900 } })
    await context.addInitScript(() => localStorage.setItem('labgpu.locale', 'en'))
    await context.route('**/api/v1/**', (route) => {
      const body = api[new URL(route.request().url()).pathname]
      return route.fulfill(body ? { json: body } : { status: 404, json: { message: 'not mocked', code: 'not_found', extra: {} } })
    })
    const page = await context.newPage()
    // Start on a day view of the month, then time the switch to the month view with all N bookings.
    await page.goto('/calendar/1?date=2026-12-15&view=day')
    await page.locator('[data-testid=calendar] .ec-day-view').waitFor()
    await page.locator('[data-testid=calendar] .ec-event').first().waitFor()
    const ms = await page.evaluate(async () => {
      const t0 = performance.now()
      document.querySelector('[data-testid=calendar-view-dayGridMonth]').click()
      await new Promise((resolve) => {
        const check = () =>
          document.querySelector('[data-testid=calendar] .ec-month-view .ec-event') ? resolve() : requestAnimationFrame(check)
        requestAnimationFrame(check)
      })
      // One more frame, so layout and paint of the rendered month are included.
      await new Promise((resolve) => requestAnimationFrame(() => resolve()))
      return performance.now() - t0
    })
    timings.push(Math.round(ms))
    await context.close()
  }
} finally {
  await browser.close()
  server.close()
}
const sorted = [...timings].sort((a, b) => a - b)
const median = sorted[Math.floor(sorted.length / 2)]
const result = { bookings: N, runs: RUNS, timings_ms: timings, median_ms: median, max_ms: sorted.at(-1), budget_ms: BUDGET }
console.log(JSON.stringify(result))
if (median > BUDGET) {
  console.error(`Month view with ${N} bookings: median ${median} ms, over the ${BUDGET} ms budget.`)
  process.exit(1)
}

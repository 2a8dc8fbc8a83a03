// Where the page's JavaScript time goes before a route's content shows, at 4× CPU slowdown: a
// V8 CPU profile per load (cold cache, signed in, CDP Profiler started before the navigation),
// cut at the moment the content appears, summed over --runs loads. Prints the functions with the
// most self time and the most total time (a function's own plus its callees'), per load, in ms.
// For readable names serve an unminified build:
//   npx vite build --minify false --outDir /tmp/dist-unmin   (then LABGPU_FRONTEND_DIST=/tmp/dist-unmin)
//   E2E_BASE_URL=http://127.0.0.1:8000 node scripts/dashboard-profile.mjs [--runs 5] [--route /] [--top 40]
import { parseArgs } from 'node:util'

import { BASE_URL, launch, signIn } from '../e2e/support.mjs'

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    route: { type: 'string', default: '/' },
    rate: { type: 'string', default: '4' },
    user: { type: 'string', default: 'alice' },
    top: { type: 'string', default: '40' },
    content: { type: 'string', default: '[data-testid=upcoming-bookings] :is([data-testid=booking-table], .empty)' },
  },
})

async function profileOnce(browser, storageState) {
  const context = await browser.newContext({ baseURL: BASE_URL, viewport: { width: 1440, height: 900 }, storageState })
  let arrived
  const reached = new Promise((resolve) => (arrived = resolve))
  await context.exposeBinding('__benchReached', () => arrived())
  await context.addInitScript((selector) => {
    new MutationObserver((_, observer) => {
      if (document.querySelector(selector)) {
        observer.disconnect()
        window.__contentAt = performance.now()
        window.__benchReached()
      }
    }).observe(document, { childList: true, subtree: true })
  }, values.content)
  const page = await context.newPage()
  const cdp = await context.newCDPSession(page)
  await cdp.send('Network.enable')
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true })
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: Number(values.rate) })
  await cdp.send('Profiler.enable')
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 })
  await cdp.send('Profiler.start')
  await page.goto(values.route, { waitUntil: 'commit' })
  await reached
  const { profile } = await cdp.send('Profiler.stop')
  const contentAt = await page.evaluate(() => window.__contentAt)
  await context.close()
  return { profile, contentAt }
}

// Self and total time per function (url:line name) up to the content, from the profile's samples.
function summarise({ profile }) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const key = (n) => {
    const f = n.callFrame
    const file = f.url ? f.url.replace(BASE_URL, '').replace(/-[\w-]{8}\.js$/, '.js') : ''
    return `${f.functionName || '(anonymous)'} ${file}:${f.lineNumber + 1}`
  }
  const self = new Map()
  const total = new Map()
  // Stretches of 5 ms or more with nothing to run (waiting on the network or a timer), from the start.
  const idle = []
  // Samples until the content appeared: the profile runs a little past it (the stop round trip).
  let t = profile.startTime
  const end = profile.endTime
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]
    if (t > end) break
    const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000
    let node = byId.get(profile.samples[i])
    if (node.callFrame.functionName === '(idle)') {
      const last = idle.at(-1)
      const at = (t - profile.startTime) / 1000
      if (last && Math.abs(last.to - at) < 1) last.to = at + dt
      else idle.push({ from: at, to: at + dt })
    }
    self.set(key(node), (self.get(key(node)) ?? 0) + dt)
    const seen = new Set()
    while (node) {
      const k = key(node)
      if (!seen.has(k)) total.set(k, (total.get(k) ?? 0) + dt)
      seen.add(k)
      node = byId.get(parent.get(node.id))
    }
  }
  return { self, total, idle: idle.filter((s) => s.to - s.from >= 5).map((s) => `${Math.round(s.from)}–${Math.round(s.to)}`) }
}

const browser = await launch()
const signedIn = await signIn(browser, values.user)
const storageState = await signedIn.context.storageState()
await signedIn.context.close()
const runs = Number(values.runs)
const self = new Map()
const total = new Map()
const contents = []
for (let i = 0; i < runs; i++) {
  const result = await profileOnce(browser, storageState)
  contents.push(Math.round(result.contentAt))
  const s = summarise(result)
  console.log(`load ${i + 1}: content at ${contents.at(-1)} ms; idle (ms from the profile's start): ${s.idle.join(', ')}`)
  for (const [k, v] of s.self) self.set(k, (self.get(k) ?? 0) + v / runs)
  for (const [k, v] of s.total) total.set(k, (total.get(k) ?? 0) + v / runs)
}
await browser.close()
const top = (m) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(values.top))
    .map(([k, v]) => `${v.toFixed(1).padStart(7)} ms  ${k}`)
console.log(`content at ${contents.join(', ')} ms (profiling slows the page)`)
console.log('\nself time per load:\n' + top(self).join('\n'))
console.log('\ntotal time per load:\n' + top(total).join('\n'))

// `npm run test:e2e`: runs every e2e/*.spec.mjs with node's test runner, one file at a time (with
// E2E_SHARD=k/n, only shard k's share of them: run-e2e.sh runs the n shards side by side).
// Needs E2E_BASE_URL (a LabGPU serving the built SPA with seeded demo data) and /usr/bin/chromium.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
if (!process.env.E2E_BASE_URL) {
  console.error('E2E_BASE_URL is not set: start LabGPU (e.g. `make run`) and point E2E_BASE_URL at it.')
  process.exit(2)
}
const chromium = process.env.E2E_CHROMIUM ?? '/usr/bin/chromium'
if (!existsSync(chromium)) {
  console.error(`${chromium} is missing: apt-get install -y chromium (never a downloaded browser).`)
  process.exit(2)
}
// Seconds each spec took in a two-shard run on a busy machine (2026-12-03, load average ~10): only
// their ratios matter, for balancing run-e2e.sh's shards. A new spec counts as DEFAULT_SECONDS.
const SECONDS = {
  booking: 59, budgets: 48, chat: 138, daily: 281, daily2: 158, daily3: 170, feeds: 29,
  invitations: 71, keyboard: 21, money: 250, move: 13, notebook: 92, pages: 130,
  'phone-plurals': 53, picker: 18, placement: 22, quota: 12, refusals: 455, research: 130,
  series: 24, siteadmin: 265, sso: 16, sweep: 439, truth: 496, truth2: 545, usage: 38,
  utilisation: 231, 'volume-changes': 411, volumes: 88, waitlist: 45, zhcn: 157,
}
const DEFAULT_SECONDS = 60
const only = process.argv.slice(2)
const chosen = readdirSync(here)
  .filter((f) => f.endsWith('.spec.mjs'))
  .filter((f) => !only.length || only.some((o) => f.includes(o)))
  .sort()
const specs = shareOf(chosen, process.env.E2E_SHARD ?? '1/1').map((f) => join(here, f))
console.log(`e2e specs on ${process.env.E2E_BASE_URL}: ${specs.map((f) => basename(f, '.spec.mjs')).join(', ')}`)
if (!specs.length) {
  // node --test with no file would run every test file it finds.
  console.log('no spec for this shard')
  process.exit(0)
}
// Sessions saved by an earlier run belong to whatever server ran then (files are per server).
const auth = join(process.cwd(), 'test-results', '.auth')
const host = new URL(process.env.E2E_BASE_URL).host.replace(/[^\w.-]/g, '_')
if (existsSync(auth)) for (const f of readdirSync(auth)) if (f.startsWith(`${host}-`)) rmSync(join(auth, f), { force: true })
// E2E_GREP picks tests by name inside the chosen specs (e.g. E2E_GREP='bug 11').
const grep = process.env.E2E_GREP ? [`--test-name-pattern=${process.env.E2E_GREP}`] : []
const result = spawnSync(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=spec', ...grep, ...specs], {
  stdio: 'inherit',
})
process.exit(result.status ?? 1)

/**
 * Shard `k/n`'s specs (E2E_SHARD, run-e2e.sh): longest first, each to the shard with the least so
 * far, by the seconds a spec took in CI (SECONDS; a spec not listed counts as DEFAULT_SECONDS), so
 * the shards end at about the same time. Every spec lands in exactly one shard.
 */
function shareOf(files, shard) {
  const [k, n] = shard.split('/').map(Number)
  if (!(n >= 1 && k >= 1 && k <= n)) throw new Error(`E2E_SHARD=${shard}: expected k/n with 1 <= k <= n`)
  const load = Array(n).fill(0)
  const mine = []
  const seconds = (f) => SECONDS[basename(f, '.spec.mjs')] ?? DEFAULT_SECONDS
  for (const f of [...files].sort((a, b) => seconds(b) - seconds(a) || a.localeCompare(b))) {
    const least = load.indexOf(Math.min(...load))
    load[least] += seconds(f)
    if (least === k - 1) mine.push(f)
  }
  return mine.sort()
}

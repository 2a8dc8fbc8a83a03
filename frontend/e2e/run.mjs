// `npm run test:e2e`: runs every e2e/*.spec.mjs with node's test runner, one file at a time.
// Needs E2E_BASE_URL (a LabGPU serving the built SPA with seeded demo data) and /usr/bin/chromium.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
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
const only = process.argv.slice(2)
const specs = readdirSync(here)
  .filter((f) => f.endsWith('.spec.mjs'))
  .filter((f) => !only.length || only.some((o) => f.includes(o)))
  .sort()
  .map((f) => join(here, f))
// Sessions saved by an earlier run belong to whatever server ran then.
rmSync(join(process.cwd(), 'test-results', '.auth'), { recursive: true, force: true })
// E2E_GREP picks tests by name inside the chosen specs (e.g. E2E_GREP='bug 11').
const grep = process.env.E2E_GREP ? [`--test-name-pattern=${process.env.E2E_GREP}`] : []
const result = spawnSync(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=spec', ...grep, ...specs], {
  stdio: 'inherit',
})
process.exit(result.status ?? 1)

// Initial JavaScript of the built SPA, gzipped: the entry script and everything index.html
// preloads. Fails when it passes the budget (issue 5: 250 KB). Run after `npm run build`.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'

const dist = new URL('../dist/', import.meta.url).pathname
const budget = Number(process.env.INITIAL_JS_BUDGET_KB ?? 250) * 1024
const html = readFileSync(join(dist, 'index.html'), 'utf8')
const files = [...html.matchAll(/(?:src|href)="\/?([^"]+\.js)"/g)].map((m) => m[1])
let total = 0
for (const file of files) {
  const size = gzipSync(readFileSync(join(dist, file)), { level: 9 }).length
  total += size
  console.log(`${(size / 1024).toFixed(1).padStart(8)} KB  ${file}`)
}
console.log(`${(total / 1024).toFixed(1).padStart(8)} KB  initial JS, gzipped (budget ${budget / 1024} KB)`)
if (total > budget) {
  console.error('Initial JavaScript is over budget.')
  process.exit(1)
}

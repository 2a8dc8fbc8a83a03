// Initial JavaScript of the built SPA as it crosses the wire: the entry script and everything
// index.html preloads, brotli-compressed (the .br files the build writes and WhiteNoise serves).
// Fails above the budget (issue 14: 120 KB before the first paint of any route). Run after
// `npm run build`.
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'

const dist = new URL('../dist/', import.meta.url).pathname
const budget = Number(process.env.INITIAL_JS_BUDGET_KB ?? 120) * 1024
const html = readFileSync(join(dist, 'index.html'), 'utf8')
const files = [...html.matchAll(/(?:src|href)="\/?([^"]+\.js)"/g)].map((m) => m[1])
const kb = (n) => `${(n / 1024).toFixed(1).padStart(8)} KB`
let total = 0
for (const file of files) {
  const path = join(dist, file)
  // The precompress step leaves files under 1 KB as they are: they cross the wire uncompressed, so
  // they count at their own size.
  const small = statSync(path).size < 1024
  if (!small && !existsSync(`${path}.br`)) throw new Error(`${file}.br is missing: the build's precompress step did not run`)
  const br = small ? statSync(path).size : readFileSync(`${path}.br`).length
  total += br
  console.log(`${kb(br)} br ${kb(gzipSync(readFileSync(path), { level: 9 }).length)} gzip  ${file}`)
}
console.log(`${kb(total)}  initial JS, brotli (budget ${budget / 1024} KB)`)
if (total > budget) {
  console.error('Initial JavaScript is over budget.')
  process.exit(1)
}

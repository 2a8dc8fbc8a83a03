// public/favicon.png from public/favicon.svg, drawn by Debian's Chromium at 64×64 with a
// transparent background. The page links the PNG: an SVG icon is parsed on the page's main
// thread while the first page renders (10–18 ms at 4× CPU slowdown, docs/benchmarks.md).
//   node scripts/favicon-png.mjs   (run again after changing favicon.svg; commit both)
import { readFileSync } from 'node:fs'

import { chromium } from 'playwright-core'

const SIZE = 64
const svg = readFileSync('public/favicon.svg', 'utf8').replace('<svg ', `<svg width="${SIZE}" height="${SIZE}" `)
const browser = await chromium.launch({ executablePath: process.env.E2E_CHROMIUM ?? '/usr/bin/chromium', args: ['--headless'] })
const page = await browser.newPage({ viewport: { width: SIZE, height: SIZE }, deviceScaleFactor: 1 })
await page.setContent(`<!doctype html><body style="margin:0">${svg}</body>`)
await page.screenshot({ path: 'public/favicon.png', omitBackground: true })
await browser.close()

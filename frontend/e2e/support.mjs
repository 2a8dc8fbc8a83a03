// Shared set-up for the end-to-end specs: Debian's Chromium driven by playwright-core against a
// live LabGPU (Django serving the built SPA, seeded with `manage.py seed_demo`).
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import AxeBuilder from '@axe-core/playwright'
import { chromium } from 'playwright-core'

export const BASE_URL = (process.env.E2E_BASE_URL ?? '').replace(/\/$/, '')
if (!BASE_URL) throw new Error('Set E2E_BASE_URL to the running LabGPU, e.g. http://127.0.0.1:8000')

const CHROMIUM = process.env.E2E_CHROMIUM ?? '/usr/bin/chromium'
export const SCREENSHOT_DIR = process.env.E2E_SCREENSHOT_DIR ?? join(process.cwd(), 'test-results', 'screenshots')

/** Demo people: from `seed_demo --json` output when E2E_USERS_JSON names that file, else the defaults. */
function loadPasswords() {
  const fallback = process.env.E2E_PASSWORD ?? 'labgpu-demo'
  const file = process.env.E2E_USERS_JSON
  if (!file) return () => fallback
  const { users } = JSON.parse(readFileSync(file, 'utf8'))
  const byName = new Map(users.map((u) => [u.username, u.password]))
  return (username) => byName.get(username) ?? fallback
}
export const passwordOf = loadPasswords()

export async function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      '--no-first-run',
    ],
  })
}

// The API allows 10 logins a minute per address: sign each person in once and reuse the session
// (cookies and the stored language) in every later context, across spec files too (a file per
// person and server under test-results/.auth/).
const AUTH_DIR = join(process.cwd(), 'test-results', '.auth')
const authFile = (username) => join(AUTH_DIR, `${new URL(BASE_URL).host.replace(/[^\w.-]/g, '_')}-${username}.json`)
const sessions = {
  get(username) {
    const file = authFile(username)
    return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined
  },
  set(username, state) {
    mkdirSync(AUTH_DIR, { recursive: true })
    writeFileSync(authFile(username), JSON.stringify(state))
  },
}

/** A fresh browser context (own cookies) with `username` signed in. */
export async function signIn(browser, username, { locale = 'en-US' } = {}) {
  const cached = sessions.get(username)
  const context = await browser.newContext({
    baseURL: BASE_URL,
    locale,
    viewport: { width: 1280, height: 900 },
    ...(cached ? { storageState: cached } : {}),
  })
  // Start every person in English unless the test says otherwise; the switcher is tested on its own.
  await context.addInitScript(() => {
    if (!localStorage.getItem('labgpu.locale')) localStorage.setItem('labgpu.locale', 'en')
  })
  const page = await context.newPage()
  page.on('pageerror', (e) => console.error(`[${username}] page error:`, e.message))
  if (cached) {
    await page.goto('/')
    // A stale session (another server, a new database) lands on the login page: sign in again.
    await page.locator('[data-testid=logout], [data-testid=login-form]').first().waitFor()
    if (await page.locator('[data-testid=logout]').count()) return { context, page }
  } else {
    await page.goto('/login')
  }
  await page.fill('#login-username', username)
  await page.fill('#login-password', passwordOf(username))
  await page.click('[data-testid=login-submit]')
  await page.waitForURL((url) => !url.pathname.startsWith('/login'))
  sessions.set(username, await context.storageState())
  return { context, page }
}

/** Call the API inside the signed-in session (cookies shared with the page), with CSRF. */
export async function apiCall(context, method, path, data) {
  const cookies = await context.cookies(BASE_URL)
  const csrf = cookies.find((c) => c.name === 'csrftoken')?.value ?? ''
  const response = await context.request.fetch(`${BASE_URL}${path}`, {
    method,
    data,
    headers: { 'X-CSRFToken': csrf, Referer: `${BASE_URL}/` },
  })
  const text = await response.text()
  return { status: response.status(), body: text ? JSON.parse(text) : null }
}

export async function listPools(context) {
  const { body } = await apiCall(context, 'GET', '/api/v1/pools/?page_size=100')
  return body.results
}

/** The next free window of `minutes` in `pool`, searching from a random day 2–20 days ahead. */
export async function freeWindow(context, pool, minutes, from = randomFutureHour()) {
  const to = new Date(from.getTime() + 5 * 86_400_000)
  const q = new URLSearchParams({ start: from.toISOString(), end: to.toISOString(), duration_minutes: String(minutes) })
  const { body } = await apiCall(context, 'GET', `/api/v1/pools/${pool.id}/availability/?${q}`)
  if (!body.next_free?.length) throw new Error(`no free window in pool ${pool.name}`)
  return body.next_free[0]
}

function randomFutureHour() {
  const from = new Date(Date.now() + (2 + Math.floor(Math.random() * 18)) * 86_400_000)
  from.setUTCMinutes(0, 0, 0)
  return from
}

/** 10:00 in `timeZone` on a random day 2–19 days ahead. */
export function randomMorning(timeZone) {
  const day = new Date(Date.now() + (2 + Math.floor(Math.random() * 18)) * 86_400_000)
  day.setUTCHours(10, 0, 0, 0)
  const offset = Date.parse(`${wallTime(day.toISOString(), timeZone)}:00Z`) - day.getTime()
  return new Date(day.getTime() - offset)
}

/** `YYYY-MM-DDTHH:mm` of `iso` in `timeZone`, as typed into a datetime-local field. */
export function wallTime(iso, timeZone) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
    }).formatToParts(new Date(iso)).map((p) => [p.type, p.value]),
  )
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}`
}

export async function me(context) {
  return (await apiCall(context, 'GET', '/api/v1/me/')).body
}

/** Run axe on the page; return the serious and critical violations (which must be none). */
export async function seriousViolations(page) {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze()
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`)
}

export async function screenshot(page, name) {
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true })
}

/** Wait until no request is in flight for a moment (pages load their data after navigation). */
export async function settle(page) {
  await page.waitForLoadState('networkidle')
}

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/**
 * Run Python in the server's Django (same database: run-e2e.sh exports it) and return its stdout.
 * For what no browser can do in an e2e run without workers: move the lifecycle on (a node becomes
 * ready, a teardown finishes) or read the outbox of sent mail.
 */
export function django(code) {
  const result = spawnSync(join(REPO, '.venv', 'bin', 'python'), ['manage.py', 'shell', '-c', code], {
    cwd: join(REPO, 'backend'),
    encoding: 'utf8',
  })
  if (result.status !== 0) throw new Error(`manage.py shell failed: ${result.stderr}`)
  return result.stdout.trim()
}

/** A RegExp for booking `id`'s number in a text: "#8" never matches the "#87" of booking 87. */
export const bookingNumber = (id) => new RegExp(`#${id}(?!\\d)`)

/** A RegExp for a link to booking `id`'s page: "/bookings/8" never matches "/bookings/87". */
export const bookingPath = (id) => new RegExp(`/bookings/${id}(?!\\d)`)

/** The last mail sent to `email` about booking `id` (its number in the subject, exactly). */
export function lastMailAbout(email, id) {
  return sentMail().filter((m) => m.to.includes(email) && bookingNumber(id).test(m.subject)).pop()
}

/**
 * Mail the server sent (run-e2e.sh has it written to files in E2E_MAIL_DIR): [{to, subject, body}],
 * decoded by Python's email package, oldest first.
 */
export function sentMail() {
  const dir = process.env.E2E_MAIL_DIR
  if (!dir) throw new Error('E2E_MAIL_DIR is not set: run the specs through scripts/run-e2e.sh')
  const code = `
import email, email.policy, json, pathlib, sys
out = []
files = sorted(pathlib.Path(sys.argv[1]).glob("*"), key=lambda p: p.stat().st_mtime) if pathlib.Path(sys.argv[1]).exists() else []
for path in files:
    for raw in path.read_bytes().split(b"\\n" + b"-" * 79 + b"\\n"):
        if raw.strip():
            m = email.message_from_bytes(raw, policy=email.policy.default)
            out.append({"to": m["To"], "subject": m["Subject"], "body": m.get_body(("plain",)).get_content()})
print(json.dumps(out))
`
  const result = spawnSync(join(REPO, '.venv', 'bin', 'python'), ['-c', code, dir], { encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`reading mail failed: ${result.stderr}`)
  return JSON.parse(result.stdout)
}

// Shared set-up for the end-to-end specs: Debian's Chromium driven by playwright-core against a
// live LabGPU (Django serving the built SPA, seeded with `manage.py seed_demo`).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { after, before } from 'node:test'
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

/**
 * Call inside a describe(): `const { browser, cleanup } = useBrowser()`. One Chromium for its tests,
 * launched before the first and closed after the last, once the undo steps the tests pushed onto
 * `cleanup` have run (in the order pushed; one that fails is ignored). `browser` stands for the
 * Chromium that before() launches (calls go through to it), so it can be taken at describe time.
 */
export function useBrowser() {
  let launched
  const cleanup = []
  before(async () => {
    launched = await launch()
  })
  after(async () => {
    for (const undo of cleanup) await undo().catch(() => {})
    await launched?.close()
  })
  const browser = new Proxy({}, {
    get(_, key) {
      if (!launched) throw new Error('the browser is launched in before(): use it inside a hook or a test')
      const value = launched[key]
      return typeof value === 'function' ? value.bind(launched) : value
    },
  })
  return { browser, cleanup }
}

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

/**
 * A new context for `username` (signed in, nothing in its cache yet) with the app in `lang`
 * ('en' or 'zh-CN'); `options` are the context's own (viewport, the browser's locale, timezoneId…).
 */
export async function personIn(browser, username, { lang = 'en', ...options } = {}) {
  const signedIn = await signIn(browser, username)
  const storageState = await signedIn.context.storageState()
  await signedIn.context.close()
  const context = await browser.newContext({ baseURL: BASE_URL, viewport: { width: 1280, height: 900 }, storageState, ...options })
  await context.addInitScript((chosen) => localStorage.setItem('labgpu.locale', chosen), lang)
  const page = await context.newPage()
  page.on('pageerror', (e) => console.error(`[${username}] page error:`, e.message))
  return { context, page }
}

/** A signed-out context, the browser and the app in `lang` ('en' or 'zh-CN'). */
export async function anonymous(browser, lang = 'en') {
  const context = await browser.newContext({ baseURL: BASE_URL, locale: lang === 'zh-CN' ? 'zh-CN' : 'en-US' })
  await context.addInitScript((chosen) => localStorage.setItem('labgpu.locale', chosen), lang)
  const page = await context.newPage()
  page.on('pageerror', (e) => console.error('[signed out] page error:', e.message))
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

/** The first free window of `minutes` in `pool` at or after `from` (a Date or ISO; default a random hour 2–20 days ahead). */
export async function freeWindow(context, pool, minutes, from = randomFutureHour()) {
  const start = new Date(from)
  const to = new Date(start.getTime() + 5 * 86_400_000)
  const q = new URLSearchParams({ start: start.toISOString(), end: to.toISOString(), duration_minutes: String(minutes) })
  const { body } = await apiCall(context, 'GET', `/api/v1/pools/${pool.id}/availability/?${q}`)
  if (!body.next_free?.length) throw new Error(`no free window in pool ${pool.name} after ${start.toISOString()}`)
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

/**
 * The lab `context`'s person books for: their first membership, always named, because other specs
 * may have added them to more labs (then the API asks "which lab?").
 */
export async function firstLab(context) {
  return (await me(context)).memberships[0].lab.id
}

/** A lab of `context`'s person that `other`'s person is not in: other specs may add people to more labs. */
export async function labNotShared(context, other) {
  const theirs = new Set((await me(other)).memberships.map((m) => m.lab.id))
  return (await me(context)).memberships.find((m) => !theirs.has(m.lab.id)).lab.id
}

/** Book as `context`'s person (`fields`: pool, start, end, purpose…; lab defaults to firstLab). Must succeed. */
export async function book(context, fields) {
  const { status, body } = await apiCall(context, 'POST', '/api/v1/bookings/', { lab: await firstLab(context), ...fields })
  assert.equal(status, 201, JSON.stringify(body))
  return body
}

/** Cancel booking `id` as `context`'s person: the usual undo step of a booking a test made. */
export function cancelBooking(context, id) {
  return apiCall(context, 'POST', `/api/v1/bookings/${id}/cancel/`, { reason: 'e2e' })
}

/**
 * An on-demand booking (from now to the hour after next) in the first open pool with a node free
 * now: in the whole suite other specs' running nodes may have filled the first pools.
 */
export async function bookNow(context, fields) {
  const lab = await firstLab(context)
  const pools = (await listPools(context)).filter((p) => !p.requires_approval && p.capacity > 1)
  const end = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000 + 3_600_000)
  let booked
  for (const pool of pools) {
    booked = await apiCall(context, 'POST', '/api/v1/bookings/', { pool: pool.id, lab, end: end.toISOString(), ...fields })
    if (booked.status !== 409) break
  }
  assert.equal(booked?.status, 201, JSON.stringify(booked?.body))
  return booked.body
}

/**
 * The workers' part of booking `id`, which an e2e run has none of: start it and make its node ready
 * at `ip`, its start moved `hoursAgo` back. With `heartbeat`, returns the node agent's new token.
 */
export function makeReady(id, { ip, hoursAgo = 0, heartbeat = false }) {
  return djangoValue(`
from datetime import timedelta
from labgpu.bookings.models import Booking
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.services.sweeps import booking_start
from labgpu.provisioning.tokens import hash_secret, new_heartbeat_token
booking_start(booking_id=${id})
token = new_heartbeat_token() if ${heartbeat ? 'True' : 'False'} else ""
Node.objects.filter(booking_id=${id}).update(
    status="ready", provider_id="e2e-${id}", public_ip="${ip}", passed_at=now(), ready_at=now(),
    status_changed_at=now(), **({"heartbeat_token_hash": hash_secret(token)} if token else {}))
b = Booking.objects.get(pk=${id})
Booking.objects.filter(pk=${id}).update(
    status="ready", status_changed_at=now(), start=b.start - timedelta(hours=${hoursAgo}),
    reserved_start=b.reserved_start - timedelta(hours=${hoursAgo}))
print(token)
`)
}

/** Run axe on the page; return the serious and critical violations (which must be none). */
export async function seriousViolations(page) {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze()
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`)
}

/**
 * The browser's own dialogs (window.confirm, alert) `page` opens from now on: each is dismissed and
 * its message listed, so a test can say there were none (the app asks in its own dialog).
 */
export function nativeDialogs(page) {
  const seen = []
  page.on('dialog', (dialog) => {
    seen.push(dialog.message())
    void dialog.dismiss()
  })
  return seen
}

/** Press Tab until `selector` has the focus (at most 40 times). */
export async function tabTo(page, selector) {
  for (let i = 0; i < 40; i++) {
    await page.keyboard.press('Tab')
    if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return
  }
  throw new Error(`Tab never reached ${selector}`)
}

/** After the booking form's submit: wait for the new booking's page and return its id. */
export async function openedBookingId(page) {
  await page.waitForURL(/\/bookings\/\d+$/)
  return Number(new URL(page.url()).pathname.split('/').pop())
}

/**
 * How far the page reaches past the right edge of the window (≤ 0: it does not scroll sideways),
 * with the innermost elements that stick out, to say what to fix.
 */
export async function sidewaysOverflow(page) {
  return page.evaluate(() => ({
    px: document.documentElement.scrollWidth - window.innerWidth,
    culprits: [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && ![...e.children].some((c) => c.getBoundingClientRect().right > window.innerWidth + 1))
      .slice(0, 3)
      .map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')} ${Math.round(e.getBoundingClientRect().right)}`),
  }))
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

/** The last line Django printed for `code` (the shell may greet first): the value the code prints. */
export function djangoValue(code) {
  return django(code).split('\n').pop().trim()
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

/** Fill the booking form's window as a person of `locale` types it (zh-CN: `2026-12-01 15:00`). */
export async function fillWindow(page, locale, timeZone, window) {
  const wall = (iso) => (locale === 'zh-CN' ? wallTime(iso, timeZone).replace('T', ' ') : wallTime(iso, timeZone))
  await page.locator('#booking-start').fill(wall(window.start))
  await page.locator('#booking-end').fill(wall(window.end))
}

/** Submit the booking form; the server's answer ({status, body}). */
export async function submitForm(page) {
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/api/v1/bookings/')),
    page.locator('[data-testid=booking-submit]').click(),
  ])
  return { status: answer.status(), body: await answer.json() }
}

/** The catalogue of the app's words in each language, as the specs compare the page against it. */
export const messages = {
  en: JSON.parse(readFileSync(new URL('../src/i18n/en.json', import.meta.url), 'utf8')),
  'zh-CN': JSON.parse(readFileSync(new URL('../src/i18n/zh-CN.json', import.meta.url), 'utf8')),
}

/** Sign in on the login page of `page` (a signed-out context), as a person types it. */
export async function signInOnPage(page, username) {
  await page.locator('#login-username').fill(username)
  await page.locator('#login-password').fill(passwordOf(username))
  await page.locator('[data-testid=login-submit]').click()
  await page.waitForURL((url) => !url.pathname.startsWith('/login'))
}

// Invitations (issue 16 item 4): a lab admin invites by e-mail from the members page; the invitee
// opens the mailed link, signs in (the deep link survives sign-in) or makes a local account from it
// and joins; a revoked link no longer works. Checked against the mail sent and the API's records.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'

import {
  anonymous, apiCall, me, nativeDialogs, passwordOf, screenshot, seriousViolations, signIn, useBrowser,
} from './support.mjs'

const MAIL_DIR = process.env.E2E_MAIL_DIR

/** The invitation link mailed to `email` (run-e2e.sh writes mail to files in E2E_MAIL_DIR). */
function mailedLink(email) {
  assert.ok(MAIL_DIR, 'E2E_MAIL_DIR is not set: run this spec through scripts/run-e2e.sh')
  const messages = readdirSync(MAIL_DIR).map((f) => readFileSync(join(MAIL_DIR, f), 'utf8'))
  const mine = messages.filter((m) => m.includes(`To: ${email}`)).map(decodedBody)
  assert.equal(mine.length, 1, `expected one mail to ${email}, found ${mine.length}`)
  const link = mine[0].match(/https?:\/\/\S+\/invite\/lgi_[0-9a-f]+_[\w-]+/)
  assert.ok(link, `no invitation link in the mail to ${email}`)
  return link[0]
}

/** The text of a single-part message as the file backend wrote it (8bit, base64 or QP). */
function decodedBody(message) {
  const [head, ...rest] = message.split(/\r?\n\r?\n/)
  const body = rest.join('\n\n')
  const encoding = head.match(/Content-Transfer-Encoding: *(\S+)/i)?.[1]?.toLowerCase()
  if (encoding === 'base64') return Buffer.from(body.replace(/-{5,}[\s\S]*$/, ''), 'base64').toString('utf8')
  if (encoding === 'quoted-printable') {
    const bytes = body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)))
    return Buffer.from(bytes, 'latin1').toString('utf8')
  }
  return body
}

describe('invitations (issue 16 item 4)', () => {
  const { browser } = useBrowser()
  let bob
  let vision
  const stamp = Date.now().toString(36)

  before(async () => {
    bob = await signIn(browser, 'bob')
    vision = (await me(bob.context)).memberships.find((m) => m.role === 'lab_admin').lab
  })

  async function inviteFromMembersPage(email) {
    const { page } = bob
    await page.goto(`/labs/${vision.id}`)
    await page.fill('#invite-email', email)
    await page.click('[data-testid=invite-form] button[type=submit]')
    await page.locator('[data-testid=invitations-table] tbody tr', { hasText: email }).waitFor()
    const shown = (await page.locator('[data-testid=invite-link] code').textContent()).trim()
    const mailed = mailedLink(email)
    assert.equal(shown, mailed)
    return mailed
  }

  it('a newcomer makes a local account from the mailed link, in Chinese, and joins the lab', async () => {
    const email = `newcomer-${stamp}@uni.example`
    const link = await inviteFromMembersPage(email)
    assert.deepEqual(await seriousViolations(bob.page), [])
    await screenshot(bob.page, 'invitations-members-page')

    const { context, page } = await anonymous(browser, 'zh-CN')
    await page.goto(link)
    await page.locator('[data-testid=invitation-offer]').waitFor()
    assert.match(await page.locator('[data-testid=invitation-offer]').textContent(), /邀请您以成员身份加入 Vision Lab/)
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'invitations-accept-zh')
    await page.fill('#signup-username', `newcomer${stamp}`)
    await page.fill('#signup-password', 'a long enough passphrase 42')
    await page.getByRole('button', { name: '新建账号并加入' }).click()
    await page.locator('[data-testid=invitation-joined]').waitFor()
    assert.match(await page.locator('[data-testid=invitation-joined]').textContent(), /您已加入 Vision Lab/)

    const mine = await me(context)
    assert.equal(mine.username, `newcomer${stamp}`)
    assert.equal(mine.email, email)
    assert.deepEqual(mine.memberships.map((m) => [m.lab.id, m.role]), [[vision.id, 'member']])
    // The link worked once.
    const again = await apiCall(context, 'POST', '/api/v1/invitations/preview/', { token: link.split('/').pop() })
    assert.equal(again.body.status, 'accepted')
    await context.close()
  })

  it('someone with an account opens the link, signs in, lands back on it and accepts', async () => {
    const link = await inviteFromMembersPage('mallory@example.org')
    const { context, page } = await anonymous(browser, 'en')
    await page.goto(link)
    await page.click('[data-testid=invitation-sign-in]')
    await page.waitForURL((url) => url.pathname === '/login')
    await page.fill('#login-username', 'mallory')
    await page.fill('#login-password', passwordOf('mallory'))
    await page.click('[data-testid=login-submit]')
    await page.waitForURL((url) => url.pathname.startsWith('/invite/'))
    assert.equal(new URL(page.url()).pathname, new URL(link).pathname)
    await page.getByRole('button', { name: 'Accept and join Vision Lab' }).click()
    await page.locator('[data-testid=invitation-joined]').waitFor()

    const roles = (await me(context)).memberships.map((m) => m.lab.name).sort()
    assert.deepEqual(roles, ['Language Lab', 'Vision Lab'])
    await context.close()
    // Pending no more: the lab admin's list drops it.
    const pending = await apiCall(bob.context, 'GET', `/api/v1/labs/${vision.id}/invitations/`)
    assert.equal(pending.body.filter((i) => i.email === 'mallory@example.org').length, 0)
  })

  it('a revoked invitation leaves the list and its link says so', async () => {
    const email = `revoked-${stamp}@uni.example`
    const link = await inviteFromMembersPage(email)
    const { page } = bob
    const native = nativeDialogs(page)
    await page.getByRole('button', { name: `Revoke the invitation for ${email}` }).click()
    await page.locator('[data-app-confirm] [data-testid=confirm-ok]').click()
    await page.locator('[data-testid=invitations-table] tbody tr', { hasText: email }).waitFor({ state: 'detached' })
    assert.deepEqual(native, [])

    const { context, page: invitee } = await anonymous(browser, 'en')
    await invitee.goto(link)
    await invitee.locator('[data-testid=invitation-closed]').waitFor()
    assert.match(await invitee.locator('[data-testid=invitation-closed]').textContent(), /revoked/)
    assert.equal(await invitee.locator('[data-testid=invitation-signup]').count(), 0)
    await context.close()
  })
})

// Invitations (issue 16 item 4): a lab admin invites by e-mail from the members page; the invitee
// opens the mailed link, signs in (the deep link survives sign-in) or makes a local account from it
// and joins; a revoked link no longer works. Checked against the mail sent and the API's records.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'

import {
  anonymous, apiCall, me, nativeDialogs, passwordOf, personIn, screenshot, seriousViolations, signIn, useBrowser,
} from './support.mjs'

const MAIL_DIR = process.env.E2E_MAIL_DIR

/** The one link matching `pattern` mailed to `email` (run-e2e.sh writes mail to files in E2E_MAIL_DIR). */
function mailedLinkTo(email, pattern) {
  assert.ok(MAIL_DIR, 'E2E_MAIL_DIR is not set: run this spec through scripts/run-e2e.sh')
  const messages = readdirSync(MAIL_DIR).map((f) => readFileSync(join(MAIL_DIR, f), 'utf8'))
  const links = messages
    .filter((m) => m.includes(`To: ${email}`))
    .map((m) => decodedBody(m).match(pattern)?.[0])
    .filter(Boolean)
  assert.equal(links.length, 1, `expected one such link mailed to ${email}, found ${links.length}`)
  return links[0]
}

/** The invitation link mailed to `email`. */
function mailedLink(email) {
  return mailedLinkTo(email, /https?:\/\/\S+\/invite\/lgi_[0-9a-f]+_[\w-]+/)
}

/** The e-mail verification link mailed to `email`. */
function mailedVerification(email) {
  return mailedLinkTo(email, /https?:\/\/\S+\/verify-email\/lgv_[0-9a-f]+_[\w-]+/)
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

  it('an account with another address is told and asked, and the inviter hears who joined (issue 22 item 4)', async () => {
    const invited = `someone-${stamp}@uni.example`
    const link = await inviteFromMembersPage(invited)
    const { context, page } = await personIn(browser, 'erin', { lang: 'zh-CN' })
    await page.goto(link)
    const warning = page.locator('[data-testid=invitation-other-address]')
    await warning.waitFor()
    assert.match(await warning.textContent(), new RegExp(`此邀请发送至 ${invited.replace('.', '\\.')}.*erin@example\\.org`))
    const acceptButton = page.locator('[data-testid=invitation-accept]')
    assert.equal(await acceptButton.isDisabled(), true, 'accepting waits for the confirmation')
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'invitations-other-address-zh')
    await page.locator('[data-testid=invitation-confirm-other]').check()
    await acceptButton.click()
    await page.locator('[data-testid=invitation-joined]').waitFor()

    const erin = await me(context)
    const joined = erin.memberships.find((m) => m.lab.id === vision.id)
    assert.ok(joined, 'erin joined Vision Lab')
    await context.close()
    // Bob, who sent it, is told in his language (zh-hans) who accepted it.
    const told = (await apiCall(bob.context, 'GET', '/api/v1/notifications/?page_size=100')).body.results
    assert.ok(told.some((n) => n.subject.includes('erin') && n.subject.includes(invited) && n.subject.includes('邀请')))
    // Undo: erin leaves Vision Lab again.
    const removed = await apiCall(bob.context, 'DELETE', `/api/v1/labs/${vision.id}/members/${joined.id}/`)
    assert.equal(removed.status, 204)
  })

  it('a new e-mail address counts once the link sent to it is opened (issue 22 item 4)', async () => {
    const fresh = `mallory-${stamp}@uni.example`
    const { context, page } = await personIn(browser, 'mallory', { lang: 'en' })
    await page.goto('/profile')
    await page.fill('#p-email', fresh)
    await page.click('[data-testid=profile-form] button[type=submit]')
    const pending = page.locator('[data-testid=email-pending]')
    await pending.waitFor()
    assert.match(await pending.textContent(), new RegExp(`Verify ${fresh.replace('.', '\\.')} via the link sent to it; until then LabGPU keeps using mallory@example\\.org`))
    assert.equal((await me(context)).email, 'mallory@example.org', 'the old address stays in effect')
    await screenshot(page, 'profile-email-pending')

    const verify = await anonymous(browser, 'zh-CN')
    await verify.page.goto(mailedVerification(fresh))
    await verify.page.locator('[data-testid=email-verified]').waitFor()
    assert.match(await verify.page.locator('[data-testid=email-verified]').textContent(), /现在是您已验证的地址/)
    await verify.context.close()
    const after = await me(context)
    assert.deepEqual([after.email, after.email_verified, after.pending_email], [fresh, true, ''])

    // Undo: back to the demo address, through its own link.
    await apiCall(context, 'POST', '/api/v1/me/email/', { email: 'mallory@example.org' })
    const token = mailedVerification('mallory@example.org').split('/').pop()
    assert.equal((await apiCall(context, 'POST', '/api/v1/email/verify/', { token })).status, 200)
    await context.close()
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

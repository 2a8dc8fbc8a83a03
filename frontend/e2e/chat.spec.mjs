// Chat channels (issue 15, item 4): a user adds a signed webhook channel, a hostile address is
// refused with the field named, the URL is never shown back, a test message reaches a local
// receiver with a valid X-LabGPU-Signature and shows as sent in the delivery log, and the channel
// is deleted. run-e2e.sh allows loopback webhooks (LABGPU_CHAT_ALLOW_LOOPBACK); no worker runs in
// the e2e server, so the spec delivers the queued message through Django itself.
import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'

import { apiCall, launch, nativeDialogs, screenshot, seriousViolations, settle, signIn } from './support.mjs'

const SECRET = 'e2e-chat-signing-secret-42'
const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** support.mjs's django(), but without blocking this process: the receiver below must answer. */
function djangoAsync(code) {
  return new Promise((resolve, reject) => {
    const child = spawn(join(REPO, '.venv', 'bin', 'python'), ['manage.py', 'shell', '-c', code], { cwd: join(REPO, 'backend') })
    let err = ''
    child.stderr.on('data', (d) => (err += d))
    child.on('close', (status) => (status === 0 ? resolve() : reject(new Error(`manage.py shell failed: ${err}`))))
  })
}

function startReceiver() {
  const received = []
  const server = createServer((req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      received.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks) })
      res.writeHead(200, { 'Content-Type': 'text/plain' })
      res.end('ok')
    })
  })
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve({ server, received, url: `http://127.0.0.1:${server.address().port}` }))
  })
}

describe('chat channels', () => {
  let browser
  let receiver
  const cleanup = []
  before(async () => {
    browser = await launch()
    receiver = await startReceiver()
  })
  after(async () => {
    for (const fn of cleanup) await fn().catch(() => {})
    await browser?.close()
    receiver?.server.close()
  })

  it('a user adds a signed webhook, sends a test message it receives, reads the log and deletes it', async () => {
    const alice = await signIn(browser, 'alice')
    const page = alice.page
    await page.setViewportSize({ width: 1440, height: 900 })
    await page.goto('/chat-channels')
    await settle(page)
    await page.getByRole('heading', { level: 1, name: 'Chat channels' }).waitFor()
    assert.deepEqual(await seriousViolations(page), [])

    // A private address is refused, and the form says which field.
    await page.selectOption('#chat-kind', 'webhook')
    await page.fill('#chat-name', 'e2e hook')
    await page.fill('#chat-url', 'https://10.0.0.1/hook')
    await page.fill('#chat-secret', SECRET)
    await page.click('[data-testid=chat-submit]')
    await page.locator('[data-testid=field-error][data-field=chat-url]').waitFor()
    assert.match(await page.locator('[data-testid=form-error]').textContent(), /not a webhook address/)

    const token = `tok${Date.now()}`
    await page.fill('#chat-url', `${receiver.url}/in/${token}`)
    await page.click('[data-testid=chat-submit]')
    const channel = await (async () => {
      for (let i = 0; i < 50; i++) {
        const found = (await apiCall(alice.context, 'GET', '/api/v1/chat-channels/')).body.find((c) => c.name === 'e2e hook')
        if (found) return found
        await page.waitForTimeout(100)
      }
      throw new Error('the channel was not created')
    })()
    cleanup.push(() => apiCall(alice.context, 'DELETE', `/api/v1/chat-channels/${channel.id}/`))
    const row = page.locator(`[data-channel-id="${channel.id}"]`)
    await row.waitFor()
    assert.equal(channel.kind, 'webhook')
    assert.ok(!JSON.stringify(channel).includes(token), 'the API never returns the URL')
    assert.ok(!(await page.content()).includes(token), 'the page never shows the URL')
    assert.ok(!(await page.content()).includes(SECRET), 'the page never shows the secret')
    assert.match(await row.textContent(), /e2e hook.*Webhook.*Me.*http:\/\/127\.0\.0\.1\/…/s)

    // Send a test message: queued, delivered (by Django, no worker here), received and signed.
    await row.locator('[data-testid=chat-test]').click()
    const log = page.locator('[data-testid=chat-log-card]')
    await log.locator('[data-testid=chat-delivery-status]', { hasText: 'Queued' }).waitFor()
    await djangoAsync(
      `from labgpu.chat.models import ChatDelivery\nfrom labgpu.chat.services import delivery_attempt\n` +
        `[delivery_attempt(delivery_id=d.pk) for d in ChatDelivery.objects.filter(channel_id=${channel.id}, status="pending")]`,
    )
    assert.equal(receiver.received.length, 1)
    const got = receiver.received[0]
    assert.equal(got.path, `/in/${token}`)
    const sig = Object.fromEntries(got.headers['x-labgpu-signature'].split(',').map((p) => p.split('=')))
    const expected = createHmac('sha256', SECRET).update(`${sig.t}.`).update(got.body).digest('hex')
    assert.equal(sig.v1, expected, 'X-LabGPU-Signature is HMAC-SHA256 over "t.body"')
    const body = JSON.parse(got.body.toString('utf8'))
    assert.equal(body.event, 'test')
    assert.match(body.text, /e2e hook/)

    await log.locator('[data-testid=chat-log-refresh]').click()
    await log.locator('[data-testid=chat-delivery-status]', { hasText: 'Sent' }).waitFor()
    assert.match(await log.locator('tbody tr').first().textContent(), /Test message.*Sent.*200.*1/s)
    assert.deepEqual(await seriousViolations(page), [])
    await screenshot(page, 'chat-channels')

    // On a phone: nothing scrolls sideways and axe is still clean.
    await page.setViewportSize({ width: 390, height: 844 })
    await page.reload()
    await settle(page)
    await row.waitFor()
    await row.locator('[data-testid=chat-log]').click()
    await log.locator('tbody tr').first().waitFor()
    const wide = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth)
    assert.equal(wide, false, 'the page scrolls sideways on a 390 px phone')
    assert.deepEqual(await seriousViolations(page), [])

    // Deleting asks in the app's own dialog, never the browser's (issue 14); Cancel keeps it.
    const native = nativeDialogs(page)
    const dialog = page.locator('[data-app-confirm]')
    const listed = async () => (await apiCall(alice.context, 'GET', '/api/v1/chat-channels/')).body.map((c) => c.id)
    await row.locator('[data-testid=chat-delete]').click()
    await dialog.locator('#app-confirm-message').waitFor()
    assert.match(await dialog.locator('#app-confirm-message').textContent(), /Delete the channel “e2e hook”/)
    assert.deepEqual(await seriousViolations(page), [])
    await dialog.locator('[data-testid=confirm-cancel]').click()
    await dialog.waitFor({ state: 'hidden' })
    await settle(page)
    assert.ok((await listed()).includes(channel.id), 'Cancel left the channel in place')
    assert.equal(await row.count(), 1)

    await row.locator('[data-testid=chat-delete]').click()
    await dialog.locator('[data-testid=confirm-ok]').click()
    await row.waitFor({ state: 'detached' })
    assert.deepEqual(native, [])
    assert.ok(!(await listed()).includes(channel.id))
    assert.equal((await apiCall(alice.context, 'GET', `/api/v1/chat-channels/${channel.id}/`)).status, 404)
    await alice.context.close()
  })

  it('the owner edits a channel: a bad URL is refused, then renamed, turned off, its secret replaced unseen', async () => {
    const alice = await signIn(browser, 'alice')
    const page = alice.page
    const token = `edit${Date.now()}`
    const made = await apiCall(alice.context, 'POST', '/api/v1/chat-channels/', {
      kind: 'webhook', name: 'e2e edit me', url: `${receiver.url}/in/${token}`, secret: SECRET,
    })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    cleanup.push(() => apiCall(alice.context, 'DELETE', `/api/v1/chat-channels/${made.body.id}/`))
    await page.goto('/chat-channels')
    await settle(page)
    const row = page.locator(`[data-channel-id="${made.body.id}"]`)
    await row.locator('[data-testid=chat-edit]').click()
    const form = page.locator('[data-testid=chat-edit-form]')
    await form.waitFor()
    assert.equal(await page.inputValue('#chat-edit-name'), 'e2e edit me')
    assert.equal(await page.inputValue('#chat-edit-url'), '', 'the stored URL is never shown')
    assert.equal(await page.inputValue('#chat-edit-secret'), '', 'the stored secret is never shown')
    assert.deepEqual(await seriousViolations(page), [])

    // A private address is refused under the field; nothing changes.
    await page.fill('#chat-edit-url', 'https://10.0.0.1/hook')
    await page.click('[data-testid=chat-edit-submit]')
    await page.locator('[data-testid=field-error][data-field=chat-edit-url]').waitFor()
    const unchanged = (await apiCall(alice.context, 'GET', `/api/v1/chat-channels/${made.body.id}/`)).body
    assert.deepEqual(unchanged, { ...made.body, last_delivery_status: null })

    const newSecret = 'e2e-replaced-signing-secret-7'
    await page.fill('#chat-edit-url', '')
    await page.fill('#chat-edit-name', 'e2e edited')
    await page.selectOption('#chat-edit-language', 'zh-hans')
    await page.uncheck('#chat-edit-enabled')
    await form.getByLabel('Quota at 80 % / 100 %').uncheck()
    await page.fill('#chat-edit-secret', newSecret)
    await page.click('[data-testid=chat-edit-submit]')
    await form.waitFor({ state: 'detached' })
    await row.locator('[data-testid=chat-off]').waitFor()
    assert.match(await row.textContent(), /e2e edited/)
    const after = (await apiCall(alice.context, 'GET', `/api/v1/chat-channels/${made.body.id}/`)).body
    assert.equal(after.name, 'e2e edited')
    assert.equal(after.language, 'zh-hans')
    assert.equal(after.enabled, false)
    assert.equal(after.hint, made.body.hint, 'an empty URL field keeps the URL')
    assert.ok(!after.events.includes('quota_threshold') && after.events.includes('idle_warning'))
    assert.ok(!JSON.stringify(after).includes(newSecret))
    assert.ok(!(await page.content()).includes(newSecret), 'the page never shows the new secret')

    // A test message still goes while it is off, signed with the new secret, in Chinese.
    const before = receiver.received.length
    await row.locator('[data-testid=chat-test]').click()
    await page.locator('[data-testid=chat-log-card] [data-testid=chat-delivery-status]').first().waitFor()
    await djangoAsync(
      `from labgpu.chat.models import ChatDelivery\nfrom labgpu.chat.services import delivery_attempt\n` +
        `[delivery_attempt(delivery_id=d.pk) for d in ChatDelivery.objects.filter(channel_id=${made.body.id}, status="pending")]`,
    )
    assert.equal(receiver.received.length, before + 1)
    const got = receiver.received.at(-1)
    assert.equal(got.path, `/in/${token}`)
    const sig = Object.fromEntries(got.headers['x-labgpu-signature'].split(',').map((p) => p.split('=')))
    assert.equal(sig.v1, createHmac('sha256', newSecret).update(`${sig.t}.`).update(got.body).digest('hex'))
    assert.match(JSON.parse(got.body.toString('utf8')).title, /测试消息/)
    await alice.context.close()
  })

  it('a lab admin can give a channel to the lab; a member only to themselves', async () => {
    const bob = await signIn(browser, 'bob')
    await bob.page.goto('/chat-channels')
    await settle(bob.page)
    const bobOwners = await bob.page.locator('#chat-owner option').allTextContents()
    assert.ok(bobOwners.length >= 2, `bob administers a lab: ${bobOwners}`)
    await bob.context.close()
    const alice = await signIn(browser, 'alice')
    await alice.page.goto('/chat-channels')
    await settle(alice.page)
    assert.deepEqual(await alice.page.locator('#chat-owner option').allTextContents(), ['Me'])
    await alice.context.close()
  })
})

// Issue 14: a site admin does the daily work in the web app, never opening /admin/ — a new
// instance type and a pool using it, a price change, a lab's quota, a quota request approved, a new
// lab with an admin, a maintenance window, the nodes page. Each step is checked against the API
// and the database (audit log), not only against what the page says.
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'

import {
  apiCall, djangoValue, me, screenshot, seriousViolations, settle, sidewaysOverflow, signIn, useBrowser, wallTime,
} from './support.mjs'

const stamp = Date.now().toString(36)
const TYPE = { name: `E2E MI300X ${stamp}`, slug: `e2e-type-${stamp}` }
const POOL = { name: `E2E pool ${stamp}`, slug: `e2e-pool-${stamp}` }
const LAB = `E2E Lab ${stamp}`

async function get(context, path) {
  const { status, body } = await apiCall(context, 'GET', path)
  assert.equal(status, 200, `${path}: ${JSON.stringify(body)}`)
  return body
}

async function noSidewaysScroll(page) {
  const { px, culprits } = await sidewaysOverflow(page)
  assert.ok(px <= 0, `page scrolls ${px} px sideways (${culprits.join(', ')})`)
}

function auditCount(action, targetId) {
  return Number(
    djangoValue(
      `from labgpu.audit.models import AuditEvent; print(AuditEvent.objects.filter(action=${JSON.stringify(action)}, target_id=${JSON.stringify(String(targetId))}, actor__username="carol").count())`,
    ),
  )
}

describe('site admin daily work', () => {
  const { browser } = useBrowser()
  let carol, page
  const made = {}
  const adminRequests = []
  before(async () => {
    carol = await signIn(browser, 'carol')
    page = carol.page
    page.on('request', (r) => {
      if (new URL(r.url()).pathname.startsWith('/admin/')) adminRequests.push(r.url())
    })
  })

  it('creates an instance type, showing the API field errors first', async () => {
    await page.goto('/catalog')
    await page.locator('[data-testid=instance-type-form]').waitFor()
    await settle(page)
    assert.deepEqual(await seriousViolations(page), [])
    await page.fill('#instance-type-name', TYPE.name)
    await page.fill('#instance-type-slug', 'Not A Slug')
    await page.locator('#instance-type-provider_account').selectOption({ index: 1 })
    await page.fill('#instance-type-provider_size', 'gpu-mi300x1-192gb')
    await page.locator('#instance-type-gpu_vendor').selectOption('amd')
    await page.fill('#instance-type-gpu_model', 'MI300X')
    await page.fill('#instance-type-gpu_count', '1')
    await page.fill('#instance-type-vram_gb_per_gpu', '192')
    await page.fill('#instance-type-gpu_arch', 'gfx942')
    await page.fill('#instance-type-price_per_hour', '-2')
    await page.click('[data-testid=instance-type-submit]')
    // Both bad fields are named under their inputs, from the API's 400.
    await page.locator('[data-testid=field-error][data-field=instance-type-slug]').waitFor()
    await page.locator('[data-testid=field-error][data-field=instance-type-price_per_hour]').waitFor()
    assert.equal(await page.getAttribute('#instance-type-slug', 'aria-invalid'), 'true')

    await page.fill('#instance-type-slug', TYPE.slug)
    await page.fill('#instance-type-price_per_hour', '2.5')
    await page.click('[data-testid=instance-type-submit]')
    await page.locator(`[data-instance-type="${TYPE.slug}"]`).waitFor()

    const types = await get(carol.context, '/api/v1/instance-types/?page_size=500')
    const row = types.results.find((it) => it.slug === TYPE.slug)
    assert.ok(row, 'the instance type is in the API')
    assert.equal(row.name, TYPE.name)
    assert.equal(Number(row.price_per_hour), 2.5)
    assert.equal(row.gpu_count, 1)
    assert.equal(auditCount('instance_type.create', row.id), 1)
    made.type = row
  })

  it('creates a pool using it, open to one lab, with approval', async () => {
    const labs = (await get(carol.context, '/api/v1/labs/?page_size=500')).results
    const vision = labs.find((l) => l.slug === 'vision')
    await page.fill('#pool-name', POOL.name)
    await page.fill('#pool-slug', POOL.slug)
    await page.locator('#pool-instance_type').selectOption({ label: TYPE.name })
    await page.fill('#pool-region', 'atl1')
    await page.fill('#pool-capacity', '2')
    await page.fill('#pool-granularity_minutes', '60')
    await page.fill('#pool-provisioning_lead_minutes', '15')
    await page.fill('#pool-max_duration_hours', '12')
    await page.check('#pool-requires_approval')
    await page.locator('#pool-allowed_labs').selectOption([String(vision.id)])
    await page.click('[data-testid=pool-submit]')
    await page.locator(`[data-pool="${POOL.slug}"]`).waitFor()

    const pools = (await get(carol.context, '/api/v1/pools/?page_size=500')).results
    const pool = pools.find((p) => p.slug === POOL.slug)
    assert.ok(pool, 'the pool is in the API')
    assert.equal(pool.instance_type, made.type.id)
    assert.equal(pool.capacity, 2)
    assert.equal(pool.granularity_minutes, 60)
    assert.equal(pool.provisioning_lead_minutes, 15)
    assert.equal(pool.max_duration_minutes, 12 * 60)
    assert.equal(pool.requires_approval, true)
    assert.deepEqual(pool.allowed_labs, [vision.id])
    assert.equal(auditCount('pool.create', pool.id), 1)
    made.pool = pool
    made.vision = vision
  })

  it("sets the new pool's idle policy, refused out of bounds, then turns it off", async () => {
    const record = page.locator(`[data-pool="${POOL.slug}"]`)
    assert.match(await record.locator('[data-testid=pool-idle-policy]').textContent(), /Off/)
    await record.getByRole('button', { name: 'Edit' }).click()
    await page.locator('[data-testid=pool-form-title]', { hasText: POOL.name }).waitFor()
    assert.equal(await page.inputValue('#pool-idle_reclaim_minutes'), '')
    await page.fill('#pool-idle_reclaim_minutes', '4')
    await page.fill('#pool-idle_grace_minutes', '1441')
    await page.click('[data-testid=pool-submit]')
    // Both bounds come from the API's 400, under the fields they name; nothing was saved.
    await page.locator('[data-testid=field-error][data-field=pool-idle_reclaim_minutes]').waitFor()
    await page.locator('[data-testid=field-error][data-field=pool-idle_grace_minutes]').waitFor()
    assert.equal((await get(carol.context, `/api/v1/pools/${made.pool.id}/`)).idle_reclaim_minutes, null)

    await page.fill('#pool-idle_reclaim_minutes', '20')
    await page.fill('#pool-idle_grace_minutes', '45')
    await page.click('[data-testid=pool-submit]')
    await record.locator('[data-testid=pool-idle-policy]', { hasText: '20 idle minutes' }).waitFor()
    const on = await get(carol.context, `/api/v1/pools/${made.pool.id}/`)
    assert.deepEqual([on.idle_reclaim_minutes, on.idle_grace_minutes], [20, 45])
    // Editing one rule keeps the others (labs, approval) as they were.
    assert.deepEqual(on.allowed_labs, [made.vision.id])
    assert.equal(on.requires_approval, true)
    const changed = djangoValue(
      `import json; from labgpu.audit.models import AuditEvent; print(json.dumps(AuditEvent.objects.filter(action="pool.update", target_id="${made.pool.id}", actor__username="carol").latest("pk").data["changes"], sort_keys=True))`,
    )
    assert.deepEqual(JSON.parse(changed), {
      idle_grace_minutes: { from: 30, to: 45 }, idle_reclaim_minutes: { from: null, to: 20 },
    })

    await record.getByRole('button', { name: 'Edit' }).click()
    assert.equal(await page.inputValue('#pool-idle_reclaim_minutes'), '20')
    await page.fill('#pool-idle_reclaim_minutes', '')
    await page.click('[data-testid=pool-submit]')
    await record.locator('[data-testid=pool-idle-policy]', { hasText: 'Off' }).waitFor()
    const off = await get(carol.context, `/api/v1/pools/${made.pool.id}/`)
    assert.deepEqual([off.idle_reclaim_minutes, off.idle_grace_minutes], [null, 45])
    assert.equal(auditCount('pool.update', made.pool.id), 2)
  })

  it('changes the price, which says it applies to new bookings', async () => {
    const note = await page.locator('[data-testid=price-note]').textContent()
    assert.match(note, /from now on/)
    const record = page.locator(`[data-instance-type="${TYPE.slug}"]`)
    await record.locator(`#price-${made.type.id}`).fill('3.75')
    await record.locator('[data-testid=price-save]').click()
    await record.getByText('$3.75').waitFor()
    const row = await get(carol.context, `/api/v1/instance-types/${made.type.id}/`)
    assert.equal(row.price_per_hour, '3.7500')
    const changed = djangoValue(
      `from labgpu.audit.models import AuditEvent; print(AuditEvent.objects.get(action="instance_type.update", target_id="${made.type.id}").data["changes"]["price_per_hour"]["to"])`,
    )
    assert.equal(changed, '3.7500')
    await screenshot(page, 'siteadmin-catalog')
  })

  it('fits a phone: the catalog never scrolls sideways at 390 px', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    await page.goto('/catalog')
    await page.locator(`[data-instance-type="${TYPE.slug}"]`).waitFor()
    await noSidewaysScroll(page)
    await page.goto('/lab-admin')
    await page.locator('[data-testid=lab-admin-list] [data-lab]').first().waitFor()
    await noSidewaysScroll(page)
    await page.goto('/quotas')
    await page.locator('[data-testid=quota-set-form]').waitFor()
    await noSidewaysScroll(page)
    await page.setViewportSize({ width: 1280, height: 900 })
  })

  it("sets a lab's quota, then approves a quota request that adds to it", async () => {
    await page.goto('/quotas')
    await page.locator('[data-testid=quota-set-form]').waitFor()
    // The month the page lists (the quota month in effect, a UTC month; it once followed Carol's
    // clock): whatever it is, a quota set for it is listed.
    const month = await page.inputValue('#quota-month')
    assert.match(month, /^\d{4}-\d{2}$/)
    await settle(page)
    assert.deepEqual(await seriousViolations(page), [])
    await page.locator('#quota-set-lab').selectOption({ label: made.vision.name })
    await page.locator('#quota-set-instance_type').selectOption({ label: TYPE.name })
    await page.fill('#quota-set-month', month)
    await page.fill('#quota-set-gpu_hours', '120')
    await page.click('[data-testid=quota-set-submit]')
    await page.locator(`[data-testid=quota-bar][data-label="${made.vision.name} · ${TYPE.name}"]`).waitFor()
    const query = `lab=${made.vision.id}&instance_type=${made.type.id}&month=${month}-01`
    const [quota] = (await get(carol.context, `/api/v1/quotas/?${query}`)).results
    assert.equal(quota.gpu_hours, '120.00')
    assert.equal(auditCount('quota.set', quota.id), 1)

    // Bob, the lab's admin, asks for 30 more hours; Carol approves on the approvals page.
    const bob = await signIn(browser, 'bob')
    const reason = `e2e siteadmin ${stamp}`
    const asked = await apiCall(bob.context, 'POST', '/api/v1/quota-requests/', {
      lab: made.vision.id, instance_type: made.type.id, month: `${month}-01`, gpu_hours: '30', reason,
    })
    assert.equal(asked.status, 201, JSON.stringify(asked.body))
    await bob.context.close()
    await page.goto('/approvals')
    const row = page.locator('[data-testid=pending-quota-requests] tr', { hasText: reason })
    await row.locator('[data-testid=approve]').click()
    await row.waitFor({ state: 'detached' })
    const decided = await get(carol.context, `/api/v1/quota-requests/${asked.body.id}/`)
    assert.equal(decided.status, 'approved')
    assert.equal(decided.decided_by, 'carol')
    const [after] = (await get(carol.context, `/api/v1/quotas/?${query}`)).results
    assert.equal(after.gpu_hours, '150.00')
  })

  it('creates a lab, makes Dave its admin, and sees him listed as such', async () => {
    await page.goto('/lab-admin')
    await page.locator('[data-testid=lab-form]').waitFor()
    await settle(page)
    assert.deepEqual(await seriousViolations(page), [])
    await page.fill('#lab-name', 'Vision Lab') // taken: the API says so under the name
    await page.click('[data-testid=lab-submit]')
    await page.locator('[data-testid=field-error][data-field=lab-name]').waitFor()
    await page.fill('#lab-name', LAB)
    await page.click('[data-testid=lab-submit]')
    const record = page.locator('[data-testid=lab-admin-list] li', { hasText: LAB })
    await record.waitFor()
    const lab = (await get(carol.context, '/api/v1/labs/?page_size=500')).results.find((l) => l.name === LAB)
    assert.ok(lab?.is_active, 'the lab is in the API, active')
    assert.equal(auditCount('lab.create', lab.id), 1)

    await record.getByRole('link').click()
    await page.waitForURL(`**/labs/${lab.id}`)
    await page.fill('#member-username', 'dave')
    await page.locator('#member-role').selectOption('lab_admin')
    await page.locator('[data-testid=member-add] button[type=submit]').click()
    await page.locator('[data-testid=lab-members]', { hasText: 'dave' }).waitFor()
    const members = (await get(carol.context, `/api/v1/labs/${lab.id}/members/`)).results
    assert.deepEqual(members.map((m) => [m.user.username, m.role]), [['dave', 'lab_admin']])

    await page.goto('/lab-admin')
    const again = page.locator('[data-testid=lab-admin-list] li', { hasText: LAB })
    await again.getByRole('button', { name: 'Show members and admins' }).click()
    await again.locator('[data-testid=lab-people]', { hasText: 'dave' }).waitFor()
    made.lab = lab
  })

  it('creates a maintenance window on the new pool in her own time zone', async () => {
    const { timezone } = await me(carol.context)
    const start = new Date(Date.now() + 10 * 86_400_000)
    start.setUTCMinutes(0, 0, 0)
    const end = new Date(start.getTime() + 3 * 3_600_000)
    await page.goto('/blackouts')
    await page.locator('[data-testid=blackout-form]').waitFor()
    await page.locator('#blackout-pool').selectOption(String(made.pool.id))
    await page.fill('#blackout-start', wallTime(start.toISOString(), timezone))
    await page.fill('#blackout-end', wallTime(end.toISOString(), timezone))
    await page.fill('#blackout-reason', `e2e ${stamp}`)
    await page.click('[data-testid=blackout-submit]')
    await page.locator('[data-testid=blackout-list]', { hasText: `e2e ${stamp}` }).waitFor()
    const blackouts = (await get(carol.context, `/api/v1/blackouts/?pool=${made.pool.id}`)).results
    assert.equal(blackouts.length, 1)
    assert.equal(new Date(blackouts[0].start).getTime(), start.getTime())
    assert.equal(new Date(blackouts[0].end).getTime(), end.getTime())
  })

  it('opens Nodes, then archives the lab and deactivates the pool', async () => {
    await page.goto('/nodes')
    await page.locator('[data-testid=node-list]').waitFor()
    await settle(page)
    assert.deepEqual(await seriousViolations(page), [])

    await page.goto('/lab-admin')
    const record = page.locator('[data-testid=lab-admin-list] li', { hasText: LAB })
    await record.getByRole('button', { name: 'Archive' }).click()
    await page.click('[data-testid=confirm-ok]')
    await record.getByText('Archived').waitFor()
    assert.equal((await get(carol.context, `/api/v1/labs/${made.lab.id}/`)).is_active, false)

    await page.goto('/catalog')
    const pool = page.locator(`[data-pool="${POOL.slug}"]`)
    await pool.getByRole('button', { name: 'Deactivate' }).click()
    await pool.getByText('Inactive').waitFor()
    assert.equal((await get(carol.context, `/api/v1/pools/${made.pool.id}/`)).is_active, false)
    assert.deepEqual(adminRequests, [], 'the daily work never opened /admin/')
  })
})

// Issue 24 acceptance 3 and 4: a site admin sets a pool's persistent volume and fallback regions in
// the catalog screen (no /admin/), checked against the API and the audit log; the demo data has an
// extension of alice's awaiting bob in his approval queue and a pool that offers volumes.
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'

import {
  apiCall, bookNow, cancelBooking, djangoValue, listPools, makeReady, personIn, seriousViolations, signIn, useBrowser,
} from './support.mjs'

const stamp = Date.now().toString(36)
const POOL = { name: `E2E volume pool ${stamp}`, slug: `e2e-vol-${stamp}` }

async function get(context, path) {
  const { status, body } = await apiCall(context, 'GET', path)
  assert.equal(status, 200, `${path}: ${JSON.stringify(body)}`)
  return body
}

describe('daily tasks on screens (issue 24)', () => {
  const { browser } = useBrowser()
  let carol
  let pool

  before(async () => {
    carol = await signIn(browser, 'carol')
    const [any] = await listPools(carol.context)
    const made = await apiCall(carol.context, 'POST', '/api/v1/pools/', {
      name: POOL.name, slug: POOL.slug, instance_type: any.instance_type, region: 'tor1', capacity: 1,
    })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    pool = made.body
  })

  it("a site admin sets a pool's volume scope and fallback regions in the catalog", async () => {
    const { page } = carol
    await page.goto('/catalog')
    const record = page.locator(`[data-pool="${POOL.slug}"]`)
    assert.match(await record.locator('[data-testid=pool-volumes]').textContent(), /Persistent volume: None.*Fallback regions: none/s)
    await record.getByRole('button', { name: 'Edit' }).click()
    await page.locator('[data-testid=pool-form-title]', { hasText: POOL.name }).waitFor()
    assert.equal(await page.inputValue('#pool-volume_scope'), 'none')
    assert.equal(await page.inputValue('#pool-fallback_regions'), '')

    // A region that is not a slug is refused under its field, and nothing is saved.
    await page.fill('#pool-fallback_regions', 'nyc2, Not A Region!')
    await page.click('[data-testid=pool-submit]')
    await page.locator('[data-testid=field-error][data-field=pool-fallback_regions]').waitFor()
    assert.deepEqual((await get(carol.context, `/api/v1/pools/${pool.id}/`)).fallback_regions, [])

    await page.fill('#pool-fallback_regions', 'nyc2, atl1')
    await page.locator('#pool-volume_scope').selectOption({ label: 'One per user' })
    await page.click('[data-testid=pool-submit]')
    await record.locator('[data-testid=pool-volumes]', { hasText: 'nyc2, atl1' }).waitFor()
    assert.match(await record.locator('[data-testid=pool-volumes]').textContent(), /One per user/)
    const saved = await get(carol.context, `/api/v1/pools/${pool.id}/`)
    assert.deepEqual([saved.volume_scope, saved.fallback_regions], ['user', ['nyc2', 'atl1']])
    const changed = djangoValue(
      `import json; from labgpu.audit.models import AuditEvent; print(json.dumps(sorted(AuditEvent.objects.filter(action="pool.update", target_id="${pool.id}", actor__username="carol").latest("pk").data["changes"])))`,
    )
    assert.deepEqual(JSON.parse(changed), ['fallback_regions', 'volume_scope'])

    // Clearing the field removes the fallbacks; the scope goes back to none.
    await record.getByRole('button', { name: 'Edit' }).click()
    assert.equal(await page.inputValue('#pool-fallback_regions'), 'nyc2, atl1')
    assert.equal(await page.inputValue('#pool-volume_scope'), 'user')
    await page.fill('#pool-fallback_regions', '')
    await page.locator('#pool-volume_scope').selectOption('none')
    await page.click('[data-testid=pool-submit]')
    await record.locator('[data-testid=pool-volumes]', { hasText: 'Fallback regions: none' }).waitFor()
    const cleared = await get(carol.context, `/api/v1/pools/${pool.id}/`)
    assert.deepEqual([cleared.volume_scope, cleared.fallback_regions], ['none', []])
    assert.deepEqual(await seriousViolations(page), [])
  })

  it('the same form reads in Chinese', async () => {
    const { context, page } = await personIn(browser, 'carol', { lang: 'zh-CN' })
    await page.goto('/catalog')
    const record = page.locator(`[data-pool="${POOL.slug}"]`)
    await record.locator('[data-testid=pool-volumes]', { hasText: /持久卷: 不提供 · .+ · 备用区域: 无/ }).waitFor()
    await record.getByRole('button', { name: '编辑' }).click()
    await page.locator('label[for=pool-volume_scope]', { hasText: '持久卷' }).waitFor()
    assert.deepEqual(
      await page.locator('#pool-volume_scope option:not([disabled])').allTextContents(),
      ['不提供', '每位用户一个', '每个实验室一个'],
    )
    await context.close()
  })

  it('the demo has an extension of alice awaiting bob, and a pool that offers volumes', async () => {
    const bob = await signIn(browser, 'bob')
    await bob.page.goto('/approvals')
    const row = bob.page.locator('[data-kind=extension]', { hasText: 'Video diffusion ablations' })
    await row.waitFor()
    assert.match(await row.textContent(), /alice/i)
    await row.locator('[data-testid=extension-end]').waitFor()
    await bob.context.close()
    const demo = (await listPools(carol.context)).filter((p) => !p.slug.startsWith('e2e-'))
    const offering = demo.filter((p) => p.volume_scope && p.volume_scope !== 'none')
    assert.deepEqual(offering.map((p) => p.slug), ['h100-tor1'])
  })

  it("a researcher sees which booking each volume is attached to", async () => {
    const alice = await signIn(browser, 'alice')
    const booking = await bookNow(alice.context, { purpose: 'e2e volume attached' })
    makeReady(booking.id, { ip: '203.0.113.24' })
    djangoValue(`
from labgpu.accounts.models import User
from labgpu.catalog.models import ProviderAccount
from labgpu.provisioning.models import Node, Volume
Volume.objects.filter(name__startswith="e2e-daily3-").delete()
node = Node.objects.get(booking_id=${booking.id})
Volume.objects.create(owner_user=User.objects.get(username="alice"), provider_account=node.provider_account,
    region=node.region, name="e2e-daily3-on", size_gb=100, state="attached", attached_node=node)
Volume.objects.create(owner_user=User.objects.get(username="alice"), provider_account=node.provider_account,
    region="atl1", name="e2e-daily3-off", size_gb=50, state="available")
print(node.pk)
`)
    try {
      await alice.page.goto('/volumes')
      const on = alice.page.locator('[data-volume="e2e-daily3-on"]')
      const link = on.getByTestId('volume-attached').getByRole('link')
      await link.waitFor()
      assert.equal(await link.textContent(), `attached to booking #${booking.id}`)
      assert.equal(await link.getAttribute('href'), `/bookings/${booking.id}`)
      assert.equal(await alice.page.locator('[data-volume="e2e-daily3-off"] [data-testid=volume-attached]').count(), 0)
      await link.click()
      await alice.page.waitForURL(`**/bookings/${booking.id}`)
    } finally {
      djangoValue('from labgpu.provisioning.models import Volume; Volume.objects.filter(name__startswith="e2e-daily3-").delete(); print(0)')
      await cancelBooking(alice.context, booking.id)
      await alice.context.close()
    }
  })
})

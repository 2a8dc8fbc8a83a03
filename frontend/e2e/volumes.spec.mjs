// Persistent volumes (issue 15 item 1): a researcher sees their volumes with size, use, region
// and the storage cost metered so far, cannot delete one a booking uses, and deletes a free one
// (asked in the app's dialog: Cancel keeps it);
// a site admin sees everyone's. Volumes and their metered storage are written straight into the
// database (what provisioning and the meter record), then read and changed through the page.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { apiCall, django, launch, nativeDialogs, seriousViolations, settle, signIn } from './support.mjs'

function seedVolumes() {
  django(`
from datetime import timedelta
from decimal import Decimal
from labgpu.accounts.models import User
from labgpu.catalog.models import ProviderAccount
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node, Volume
from labgpu.usage.models import StorageUsage
alice = User.objects.get(username="alice")
StorageUsage.objects.filter(volume__name__startswith="e2e-").delete()
Volume.objects.filter(name__startswith="e2e-").delete()
account = ProviderAccount.objects.order_by("pk").first()
node = Node.objects.filter(booking__user=alice).order_by("pk").first()
busy = Volume.objects.create(owner_user=alice, provider_account=account, region="tor1",
    name="e2e-busy-tor1", size_gb=100, provider_id="", state="attached", attached_node=node,
    used_gb=Decimal("12.50"), used_at=now())
free = Volume.objects.create(owner_user=alice, provider_account=account, region="atl1",
    name="e2e-free-atl1", size_gb=50, provider_id="", state="available")
start = now() - timedelta(days=10)
StorageUsage.objects.create(volume=free, lab=alice.labs.order_by("pk").first(), user=alice,
    region="atl1", size_gb=50, started_at=start, ended_at=start + timedelta(hours=146),
    gb_months=Decimal("10"), cost=Decimal("1.00"))
print(busy.pk, free.pk)
`)
}

describe('volumes (issue 15)', () => {
  let browser
  before(async () => {
    browser = await launch()
    seedVolumes()
  })
  after(async () => {
    await browser?.close()
  })

  it('a researcher sees size, use, region and cost, and only a free volume can be deleted', async () => {
    const { context, page } = await signIn(browser, 'alice')
    await page.goto('/volumes')
    const busy = page.locator('[data-volume="e2e-busy-tor1"]')
    const free = page.locator('[data-volume="e2e-free-atl1"]')
    await busy.waitFor()
    assert.match(await busy.textContent(), /tor1.*100 GB.*12\.5 GB \(13 %\)/s)
    assert.match(await busy.getByTestId('volume-used').textContent(), /as of /)
    assert.match(await busy.getByTestId('volume-state').textContent(), /In use by a booking/)
    assert.equal(await free.getByTestId('volume-cost').textContent(), '$1.00')
    assert.ok(await busy.getByTestId('volume-delete').isDisabled(), 'a volume in use cannot be deleted')
    assert.deepEqual(await seriousViolations(page), [])

    // the API refuses too, with the reason
    const listed = await apiCall(context, 'GET', '/api/v1/volumes/')
    const id = listed.body.find((v) => v.name === 'e2e-busy-tor1').id
    const refused = await apiCall(context, 'DELETE', `/api/v1/volumes/${id}/`)
    assert.equal(refused.status, 409)
    assert.equal(refused.body.code, 'volume_in_use')

    // Deleting asks in the app's own dialog (issue 14), naming the volume, its size and the loss
    // of its data; Cancel keeps it, on the server too.
    const native = nativeDialogs(page)
    const dialog = page.locator('[data-app-confirm]')
    const question = dialog.locator('#app-confirm-message')
    // A screen reader hears which volume the button deletes, not a row of bare "Delete"s.
    await free.getByRole('button', { name: 'Delete volume e2e-free-atl1' }).click()
    await question.waitFor()
    assert.match(await question.textContent(), /“e2e-free-atl1” \(50 GB\)\? All its data is lost for good/)
    assert.deepEqual(await seriousViolations(page), [])
    await dialog.getByTestId('confirm-cancel').click()
    await dialog.waitFor({ state: 'hidden' })
    await settle(page)
    const kept = (await apiCall(context, 'GET', '/api/v1/volumes/')).body.find((v) => v.name === 'e2e-free-atl1')
    assert.equal(kept?.state, 'available', 'Cancel left the volume in place')
    assert.equal(await free.count(), 1)

    await free.getByTestId('volume-delete').click()
    await dialog.getByTestId('confirm-ok').click()
    await free.waitFor({ state: 'detached' })
    assert.deepEqual(native, [])
    assert.match(django('from labgpu.provisioning.models import Volume; print(Volume.objects.get(name="e2e-free-atl1").state)'), /deleted$/)
    await context.close()
  })

  it('the usage page shows storage cost beside the GPU cost', async () => {
    const { context, page } = await signIn(browser, 'alice')
    await page.goto('/usage')
    const card = page.getByTestId('usage-storage')
    await card.waitFor()
    assert.match(await card.textContent(), /\$1\.00/)
    await context.close()
  })

  it('another lab\'s member does not see them; a site admin sees them all, also in Chinese', async () => {
    const mallory = await signIn(browser, 'mallory')
    const theirs = await apiCall(mallory.context, 'GET', '/api/v1/volumes/')
    assert.ok(!theirs.body.some((v) => v.name.startsWith('e2e-')), 'mallory sees no one else\'s volume')
    await mallory.context.close()

    const { context, page } = await signIn(browser, 'carol')
    await context.addInitScript(() => localStorage.setItem('labgpu.locale', 'zh-CN'))
    await page.goto('/volumes')
    await page.locator('[data-volume="e2e-busy-tor1"]').waitFor()
    assert.match(await page.locator('h1').textContent(), /数据卷/)
    assert.match(await page.locator('[data-volume="e2e-busy-tor1"]').textContent(), /alice/)
    await context.close()
  })
})

describe('volume size (issue 15)', () => {
  let browser
  before(async () => {
    browser = await launch()
  })
  after(async () => {
    await browser?.close()
  })

  it('a lab admin sets the size of new volumes, refused above the site limit', async () => {
    const { context, page } = await signIn(browser, 'bob')
    await page.goto('/volumes')
    const form = page.getByTestId('volume-size')
    await form.waitFor()
    await form.getByTestId('volume-size-input').fill('999999')
    // the browser's own max would stop the submit: ask the API directly, as a script would
    const labId = await form.locator('select').inputValue()
    const refused = await apiCall(context, 'PUT', `/api/v1/volumes/lab-size/${labId}/`, { size_gb: 999999 })
    assert.equal(refused.status, 400)
    assert.ok(refused.body.extra.fields.size_gb)
    await form.getByTestId('volume-size-input').fill('250')
    await form.getByRole('button').click()
    await page.getByText('Size saved.').waitFor()
    const saved = await apiCall(context, 'GET', `/api/v1/volumes/lab-size/${labId}/`)
    assert.equal(saved.body.size_gb, 250)
    assert.deepEqual(await seriousViolations(page), [])
    await context.close()
  })
})

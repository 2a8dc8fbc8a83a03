// Every daily task has a screen (issue 24 item 6, acceptance 3): a researcher creates, grows and
// deletes a volume on /volumes, in English at 1280 px and in Chinese on a 390×844 phone; a site
// admin sets a pool's volume limit and fallback regions on /catalog.
//
// The provider is real to the server: this spec starts the DigitalOcean emulator, points the demo
// provider account at it, and plays the worker by running the same task steps (create_volume,
// resize_volume) in a Django shell, so the create, the grow and the delete go through the
// production driver. The emulator's own record (its volumes and their sizes over time) is what
// the assertions check, beside the database rows.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

import { apiCall, django, djangoValue, launch, personIn, seriousViolations, settle } from './support.mjs'

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const POOL = 'h100-tor1'

async function freePort() {
  return await new Promise((resolve) => {
    const server = createServer()
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

async function startEmulator() {
  // run-e2e.sh allows the server to reach this port only
  const port = Number(process.env.E2E_EMULATOR_PORT) || (await freePort())
  const child = spawn(join(REPO, '.venv', 'bin', 'python'), ['-m', 'emulator', '--port', String(port), '--agent-cmd', ''], {
    cwd: join(REPO, 'backend'),
    stdio: 'ignore',
  })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`${url}/_emulator/health`)).ok) return { child, url }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  child.kill()
  throw new Error('the emulator did not start')
}

/** The emulator's record of the volume `name`: its sizes over time and when it was deleted. */
async function emulated(url, name) {
  let response
  try {
    response = await fetch(`${url}/_emulator/state`)
  } catch {
    // uvicorn closes an idle keep-alive connection after 5 s; undici may just have reused it
    response = await fetch(`${url}/_emulator/state`)
  }
  const state = await response.json()
  return state.volume_ledger.filter((v) => v.name === name)
}

/** Run a worker's task step for volume `id` (labgpu.provisioning.tasks), as a worker would. */
function work(task, id) {
  django(`from labgpu.provisioning import tasks; tasks.${task}.apply(args=[${id}]).get()`)
}

const WORDS = {
  en: {
    created: /Volume labgpu-u\d+-atl1 is being created\./,
    exists: /There already is a volume for this owner in atl1; grow it instead\./,
    growing: /growing to 300 GB/,
    tooBig: /between 1 and 500 GB/,
    shrink: /can only grow/,
    available: 'Available',
  },
  'zh-CN': {
    created: /数据卷 labgpu-u\d+-atl1 正在创建。/,
    exists: /该所有者在 atl1 已有一个存储卷/,
    growing: /正在扩容到 300 GB/,
    tooBig: /1 到 500 GB/,
    shrink: /只能扩容/,
    available: '可用',
  },
}

describe('volumes: create, grow and delete from the SPA (issue 24)', () => {
  let browser
  let emulator
  let saved
  before(async () => {
    browser = await launch()
    emulator = await startEmulator()
    saved = djangoValue(`
import json
from labgpu.catalog.models import NodePool, ProviderAccount
pool = NodePool.objects.get(slug="${POOL}")
account = ProviderAccount.objects.get(instance_types__pools=pool)
print(json.dumps({"url": account.api_base_url, "fallback": pool.fallback_regions, "max": pool.max_volume_gb}))
ProviderAccount.objects.filter(pk=account.pk).update(api_base_url="${emulator.url}")
NodePool.objects.filter(pk=pool.pk).update(fallback_regions=["atl1"], max_volume_gb=500)
`)
  })
  after(async () => {
    const { url, fallback, max } = JSON.parse(saved)
    django(`
import json
from labgpu.catalog.models import NodePool, ProviderAccount
ProviderAccount.objects.filter(instance_types__pools__slug="${POOL}").update(api_base_url=${JSON.stringify(url)})
NodePool.objects.filter(slug="${POOL}").update(fallback_regions=json.loads(${JSON.stringify(JSON.stringify(fallback))}), max_volume_gb=${max ?? 'None'})
`)
    emulator?.child.kill()
    await browser?.close()
  })

  // The server answers in the language the page asks for (X-LabGPU-Language), as for the SPA.
  const people = [
    ['erin', 'en', { width: 1280, height: 900 }],
    ['alice', 'zh-CN', { width: 390, height: 844 }],
  ]
  for (const [who, lang, viewport] of people) {
    it(`${who} creates a volume in a fallback region, grows it and deletes it (${lang}, ${viewport.width} px)`, async () => {
      const words = WORDS[lang]
      const { context, page } = await personIn(browser, who, { lang, viewport })
      // The page's language, as the SPA sends it: an earlier spec may have changed the profile's.
      await context.setExtraHTTPHeaders({ 'X-LabGPU-Language': lang === 'zh-CN' ? 'zh-hans' : 'en' })
      await page.goto('/volumes')
      const form = page.getByTestId('volume-create')
      await form.waitFor()
      await form.getByTestId('volume-create-pool').selectOption({ label: 'H100 ×1 · tor1' })
      await form.getByTestId('volume-create-region').selectOption('atl1')
      await form.getByTestId('volume-create-size').fill('200')
      await form.getByTestId('volume-create-submit').click()
      await page.getByText(words.created).waitFor()

      const row = JSON.parse(djangoValue(`
import json
from labgpu.provisioning.models import Volume
v = Volume.objects.exclude(state="deleted").get(owner_user__username="${who}", region="atl1")
print(json.dumps({"id": v.pk, "name": v.name, "state": v.state, "size": v.size_gb}))
`))
      assert.deepEqual([row.state, row.size], ['creating', 200])
      const line = page.locator(`[data-volume="${row.name}"]`)
      await line.waitFor()

      // a second one in the same region is refused, and the form says so at the region
      await form.getByTestId('volume-create-submit').click()
      await form.getByText(words.exists).waitFor()

      // the worker makes it at the provider
      work('create_volume', row.id)
      assert.deepEqual((await emulated(emulator.url, row.name)).map((v) => v.sizes.map(([, size]) => size)), [[200]])
      await page.reload()
      await line.getByTestId('volume-state').getByText(words.available).waitFor()

      // grow: beyond the pool's limit is refused by the server (the browser's own check is
      // bypassed through the API, as a script would), then to 300 GB
      const over = await apiCall(context, 'POST', `/api/v1/volumes/${row.id}/resize/`, { size_gb: 501 })
      assert.equal(over.status, 400)
      assert.match(over.body.extra.fields.size_gb.join(' '), words.tooBig)
      const shrink = await apiCall(context, 'POST', `/api/v1/volumes/${row.id}/resize/`, { size_gb: 100 })
      assert.match(shrink.body.extra.fields.size_gb.join(' '), words.shrink)
      await line.getByTestId('volume-grow').click()
      const grow = page.getByTestId('volume-grow-form')
      await grow.getByTestId('volume-grow-input').fill('300')
      await grow.getByTestId('volume-grow-submit').click()
      await line.getByTestId('volume-growing').getByText(words.growing).waitFor()
      work('resize_volume', row.id)
      assert.deepEqual((await emulated(emulator.url, row.name))[0].sizes.map(([, size]) => size), [200, 300])
      await page.reload()
      await line.getByText('300 GB').first().waitFor()
      assert.equal(await line.getByTestId('volume-growing').count(), 0)
      if (viewport.width === 390) {
        const sideways = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
        assert.ok(sideways <= 0, `the page scrolls sideways by ${sideways} px`)
      }
      assert.deepEqual(await seriousViolations(page), [])

      // delete: asked in the app's dialog, then gone at the provider too
      await line.getByTestId('volume-delete').click()
      await page.locator('[data-app-confirm]').getByTestId('confirm-ok').click()
      await line.waitFor({ state: 'detached' })
      await settle(page)
      const [gone] = await emulated(emulator.url, row.name)
      assert.ok(gone.deleted_at, 'the provider deleted the volume')
      assert.match(djangoValue(`from labgpu.provisioning.models import Volume; print(Volume.objects.get(pk=${row.id}).state)`), /deleted$/)
      await context.close()
    })
  }
})

describe('catalog: a site admin sets a pool\'s volume limit and fallback regions (issue 24)', () => {
  let browser
  let saved
  before(async () => {
    browser = await launch()
    saved = djangoValue(`
import json
from labgpu.catalog.models import NodePool
pool = NodePool.objects.get(slug="${POOL}")
print(json.dumps({"fallback": pool.fallback_regions, "max": pool.max_volume_gb}))
`)
  })
  after(async () => {
    const { fallback, max } = JSON.parse(saved)
    django(`
import json
from labgpu.catalog.models import NodePool
NodePool.objects.filter(slug="${POOL}").update(fallback_regions=json.loads(${JSON.stringify(JSON.stringify(fallback))}), max_volume_gb=${max ?? 'None'})
`)
    await browser?.close()
  })

  for (const lang of ['en', 'zh-CN']) {
    it(`carol changes h100-tor1's largest volume and fallback regions, audited, with field errors (${lang})`, async () => {
      const { page } = await personIn(browser, 'carol', { lang })
      await page.goto('/catalog')
      const before = djangoValue(`from labgpu.catalog.models import NodePool; print(NodePool.objects.get(slug="${POOL}").max_volume_gb)`)
      const pool = page.locator(`[data-pool="${POOL}"]`)
      await pool.waitFor()
      await pool.getByRole('button', { name: lang === 'en' ? 'Edit' : '编辑' }).click()
      const size = page.locator('#pool-max_volume_gb')
      await size.waitFor()
      // over DigitalOcean's 16 TiB: the server refuses it at the field (the form leaves the
      // checking to the server, which names the field)
      await size.fill('20000')
      await page.locator('#pool-fallback_regions').fill('atl1, nyc2')
      await page.locator('#pool-max_volume_gb').press('Enter')
      const error = page.locator('#pool-max_volume_gb-error')
      await error.waitFor()
      assert.match(await error.textContent(), lang === 'en' ? /less than or equal to 16384/ : /16384/)
      assert.equal(djangoValue(`from labgpu.catalog.models import NodePool; print(NodePool.objects.get(slug="${POOL}").max_volume_gb)`), before)

      await size.fill(lang === 'en' ? '750' : '800')
      await page.locator('#pool-max_volume_gb').press('Enter')
      const expected = lang === 'en' ? '750' : '800'
      await pool.getByTestId('pool-volumes').getByText(new RegExp(`${expected} GB`)).waitFor()
      assert.match(await pool.getByTestId('pool-volumes').textContent(), /atl1, nyc2/)
      const audited = JSON.parse(djangoValue(`
import json
from labgpu.audit.models import AuditEvent
e = AuditEvent.objects.filter(action="pool.update", actor__username="carol").order_by("-pk").first()
print(json.dumps(e.data))
`))
      assert.equal(audited.changes.max_volume_gb.to, Number(expected))
      assert.deepEqual(await seriousViolations(page), [])
      await page.context().close()
    })
  }
})

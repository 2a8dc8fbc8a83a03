// Issue 24 acceptance 2: the server speaks the user's language. In the 简体中文 app, each refusal
// the booking form can get from the server (past start, off the grid, too short, too long, too far
// ahead, maintenance, pool full, quota, member hours, member concurrency, a lab the pool does not
// take) is provoked against the real backend, and what the form shows has no English sentence in
// it: two English words in a row once product names, units, ids and the names of things (pool,
// lab, zone) are taken out. dave's profile says English (his e-mail and chat are English) while he
// picked 简体中文 in this browser: the page he reads is Chinese, so the server's words must be
// too. Too short and too long the form refuses itself (no request); its words are checked alike.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { book, cancelBooking, django, djangoValue, freeWindow, listPools, me, personIn, signIn, useBrowser, wallTime } from './support.mjs'

const PRODUCT_NAMES_AND_UNITS = ['LabGPU', 'GPU', 'GPUs', 'SSH', 'UTC', 'GB', 'JupyterLab']
const ENGLISH = /[A-Za-z]{2,}(?:[ ,'’-]+[A-Za-z]{2,})+/g
const CJK = /[\u4e00-\u9fff]/

/** The English sentences left in `text` once the allow-list and the quoted names are out. */
export function englishLeft(text, quoted) {
  let rest = text
  for (const name of [...quoted].sort((a, b) => b.length - a.length)) rest = rest.split(name).join(' ')
  rest = rest.replace(/https?:\/\/\S+|\b\w+(?:[./]\w+)+\b/g, ' ')
  for (const word of PRODUCT_NAMES_AND_UNITS) rest = rest.replace(new RegExp(`\\b${word}\\b`, 'g'), ' ')
  return rest.match(ENGLISH) ?? []
}

const HOUR = 3_600_000
const iso = (ms) => new Date(ms).toISOString()
const py = (value) => (value === null || value === undefined ? 'None' : JSON.stringify(value))

describe('the booking form\'s refusals read in Chinese (issue 24 acceptance 2, refusals)', () => {
  const { browser, cleanup } = useBrowser()

  it('the check finds English', () => {
    assert.deepEqual(englishLeft('开始时间 The start is in the past.', []), ['The start is in the past'])
    assert.deepEqual(englishLeft('MI300X tor1 的预约不能超过 4 小时（Asia/Shanghai）', ['MI300X tor1']), [])
  })

  it('each refusal the form can get is shown in Chinese to a person reading the Chinese app', async () => {
    const dave = (await signIn(browser, 'dave')).context
    const who = await me(dave)
    const pools = await listPools(dave)
    const pool = pools.find((p) => !p.requires_approval && p.capacity >= 1 && p.capacity <= 4)
    assert.ok(pool, 'the demo has an open pool')
    const labIds = who.memberships.map((m) => m.lab.id)
    const labNames = who.memberships.map((m) => m.lab.name)

    // The pool's rules for this test (restored at its end): a 30-minute grid, 1–4 hours, 30 days ahead.
    const rules = JSON.parse(djangoValue(`from labgpu.catalog.models import NodePool as P; import json; p = P.objects.get(pk=${pool.id}); print(json.dumps(dict(g=p.granularity_minutes, lo=p.min_duration_minutes, hi=p.max_duration_minutes, ahead=p.max_days_ahead, labs=list(p.allowed_labs.values_list('pk', flat=True)))))`))
    cleanup.push(async () => django(`from labgpu.catalog.models import NodePool as P; p = P.objects.get(pk=${pool.id}); P.objects.filter(pk=p.pk).update(granularity_minutes=${rules.g}, min_duration_minutes=${rules.lo}, max_duration_minutes=${rules.hi}, max_days_ahead=${rules.ahead}); p.allowed_labs.set(${py(rules.labs)})`))
    django(`from labgpu.catalog.models import NodePool as P; P.objects.filter(pk=${pool.id}).update(granularity_minutes=30, min_duration_minutes=60, max_duration_minutes=240, max_days_ahead=30)`)

    const window = await freeWindow(dave, pool, 120, new Date(Math.ceil(Date.now() / HOUR) * HOUR + 3 * 86_400_000))
    const start = Date.parse(window.start)
    const monthOf = (ms) => new Date(ms).toISOString().slice(0, 7)
    const member = `Membership.objects.filter(user_id=${who.id})`
    const savedMembers = JSON.parse(djangoValue(`from labgpu.accounts.models import Membership; import json; print(json.dumps({m.pk: [m.max_hours_per_week, m.max_concurrent_bookings] for m in ${member}}))`))
    const restoreMembers = () => {
      for (const [pk, [hours, concurrent]] of Object.entries(savedMembers)) {
        django(`from labgpu.accounts.models import Membership; Membership.objects.filter(pk=${pk}).update(max_hours_per_week=${py(hours)}, max_concurrent_bookings=${py(concurrent)})`)
      }
    }
    const quotaRows = `Quota.objects.filter(lab_id__in=${py(labIds)}, instance_type_id=${pool.instance_type}, month='${monthOf(start)}-01')`

    const cases = [
      { code: 'start_in_past', start: Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR, minutes: 120 },
      { code: 'off_granularity', start: start + 7 * 60_000, minutes: 120 },
      { code: 'too_short', start, minutes: 30, byTheForm: true },
      { code: 'too_long', start, minutes: 300, byTheForm: true },
      { code: 'too_far_ahead', start: Math.ceil(Date.now() / HOUR) * HOUR + 40 * 86_400_000, minutes: 120 },
      {
        code: 'blackout', start, minutes: 120,
        setup: () => django(`from labgpu.catalog.models import Blackout; Blackout.objects.create(pool_id=${pool.id}, start='${iso(start)}', end='${iso(start + 2 * HOUR)}', reason='机房维护')`),
        teardown: () => django(`from labgpu.catalog.models import Blackout; Blackout.objects.filter(pool_id=${pool.id}, reason='机房维护').delete()`),
      },
      {
        code: 'pool_full', start, minutes: 120,
        setup: async () => {
          const held = []
          for (let i = 0; i < pool.capacity; i++) held.push(await book(dave, { pool: pool.id, start: iso(start), end: iso(start + 2 * HOUR), purpose: 'e2e refusals: fill the pool' }))
          return held
        },
        teardown: async (held) => { for (const b of held) await cancelBooking(dave, b.id) },
      },
      {
        code: 'quota_exceeded', start, minutes: 120,
        setup: () => JSON.parse(djangoValue(`from labgpu.quotas.models import Quota; import json; rows = ${quotaRows}; saved = {q.pk: str(q.gpu_hours) for q in rows}; rows.update(gpu_hours=0); print(json.dumps(saved))`)),
        teardown: (saved) => { for (const [pk, hours] of Object.entries(saved)) django(`from labgpu.quotas.models import Quota; Quota.objects.filter(pk=${pk}).update(gpu_hours='${hours}')`) },
      },
      {
        code: 'member_hours_exceeded', start, minutes: 120,
        setup: () => django(`from labgpu.accounts.models import Membership; ${member}.update(max_hours_per_week=1)`),
        teardown: restoreMembers,
      },
      {
        code: 'member_concurrency_exceeded', start, minutes: 120,
        setup: () => django(`from labgpu.accounts.models import Membership; ${member}.update(max_concurrent_bookings=0)`),
        teardown: restoreMembers,
      },
      {
        // With two labs, the pool takes only the one not chosen (lab_not_allowed); with one, none of
        // hers, so to her the pool does not exist (I-6).
        code: labIds.length > 1 ? 'lab_not_allowed' : 'does_not_exist', start, minutes: 120,
        afterFill: () => {
          const other = labIds.length > 1 ? `[${labIds[1]}]` : `list(Lab.objects.exclude(pk__in=${py(labIds)}).values_list('pk', flat=True)[:1])`
          django(`from labgpu.accounts.models import Lab; from labgpu.catalog.models import NodePool as P; P.objects.get(pk=${pool.id}).allowed_labs.set(${other})`)
        },
        teardown: () => django(`from labgpu.catalog.models import NodePool as P; P.objects.get(pk=${pool.id}).allowed_labs.set(${py(rules.labs)})`),
      },
    ]

    const quoted = [pool.name, ...labNames, ...pools.map((p) => p.name), who.timezone, '机房维护']
    const leaks = []
    const failures = []
    for (const refusal of cases) {
      const held = await refusal.setup?.()
      try {
        const { context, page } = await personIn(browser, 'dave', { lang: 'zh-CN' })
        await page.goto(`/bookings/new?pool=${pool.id}`)
        await page.locator('#booking-start').waitFor()
        const wall = (ms) => wallTime(iso(ms), who.timezone).replace('T', ' ')
        await page.locator('#booking-start').fill(wall(refusal.start))
        await page.locator('#booking-end').fill(wall(refusal.start + refusal.minutes * 60_000))
        await refusal.afterFill?.()
        const [answer] = await Promise.all([
          page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/api/v1/bookings/'), { timeout: 15_000 }).catch(() => null),
          page.locator('[data-testid=booking-submit]').click(),
        ])
        if (!answer && refusal.byTheForm) {
          const shown = [
            await page.locator('[data-testid=form-error]').innerText(),
            ...(await page.locator('[data-testid=booking-form] [data-testid=field-error]').allInnerTexts()),
          ].join('\n')
          const english = englishLeft(shown, quoted)
          if (!CJK.test(shown) || english.length) leaks.push(`${refusal.code}: ${JSON.stringify(english)} in «${shown}»`)
          await context.close()
          continue
        }
        if (!answer) {
          const said = await page.locator('[data-testid=booking-form]').innerText()
          failures.push(`${refusal.code}: the form sent nothing («${said.slice(0, 300)}»)`)
          await context.close()
          continue
        }
        const body = await answer.json()
        if (answer.status() < 400 || body.code !== refusal.code) {
          failures.push(`${refusal.code}: answered ${answer.status()} ${JSON.stringify(body).slice(0, 300)}`)
          await context.close()
          continue
        }
        await page.locator('[data-testid=form-error]').waitFor()
        const shown = [
          await page.locator('[data-testid=form-error]').innerText(),
          ...(await page.locator('[data-testid=booking-form] [data-testid=field-error]').allInnerTexts()),
        ].join('\n')
        assert.ok(CJK.test(shown), `${refusal.code}: ${shown}`)
        const english = englishLeft(shown, quoted)
        if (english.length) leaks.push(`${refusal.code}: ${JSON.stringify(english)} in «${shown}» (server: ${body.message})`)
        await context.close()
      } finally {
        await refusal.teardown?.(held)
      }
    }
    assert.deepEqual([...failures, ...leaks], [], `not provoked, or English in the Chinese form:\n${[...failures, ...leaks].join('\n')}`)
  })
})

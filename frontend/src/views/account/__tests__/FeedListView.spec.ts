import { flushPromises } from '@vue/test-utils'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

import { ApiError } from '@/api/client'
import type { CalendarFeed, CalendarFeedCreated, Pool } from '@/api/types'
import { mountWithApp } from '@/__tests__/helpers'
import { useConfirmStore } from '@/stores/confirm'

const pool = {
  id: 2,
  name: 'MI300X ×1 · tor1',
  slug: 'mi300x-tor1',
  instance_type: 4,
  region: 'tor1',
  capacity: 2,
} as Pool
const mine: CalendarFeed = {
  id: 5,
  kind: 'user',
  pool: null,
  pool_name: null,
  prefix: 'aaaa1111',
  created_by_token: null,
  created_at: '2026-11-30T01:00:00Z',
  revoked_at: null,
}
const revoked: CalendarFeed = {
  id: 4,
  kind: 'pool',
  pool: 2,
  pool_name: pool.name,
  prefix: 'bbbb2222',
  created_by_token: null,
  created_at: '2026-11-01T01:00:00Z',
  revoked_at: '2026-11-02T16:30:00Z',
}
const created: CalendarFeedCreated = {
  ...mine,
  id: 6,
  prefix: 'cccc3333',
  token: 'lgf_cccc3333_secret',
  url: 'http://testserver/api/v1/feeds/lgf_cccc3333_secret.ics',
}

const api = vi.hoisted(() => ({
  listFeeds: vi.fn(),
  createFeed: vi.fn(),
  revokeFeed: vi.fn(),
  listPools: vi.fn(),
}))
vi.mock('@/api/feeds', () => ({ listFeeds: api.listFeeds, createFeed: api.createFeed, revokeFeed: api.revokeFeed }))
vi.mock('@/api/catalog', () => ({ listPools: api.listPools }))

const { default: FeedListView } = await import('../FeedListView.vue')

async function mountView(locale: 'en' | 'zh-CN' = 'en') {
  const wrapper = mountWithApp(FeedListView, { locale, attachTo: document.body })
  await flushPromises()
  return wrapper
}

describe('FeedListView', () => {
  beforeEach(() => {
    api.listFeeds.mockResolvedValue([mine, revoked])
    api.listPools.mockResolvedValue([pool])
  })
  afterEach(() => {
    vi.clearAllMocks()
    vi.unstubAllGlobals()
    document.body.innerHTML = ''
  })

  it('lists feeds with kind, pool, prefix and times in the user’s time zone', async () => {
    const wrapper = await mountView()
    const rows = wrapper.findAll('[data-testid=feed-table] tbody tr')
    expect(rows).toHaveLength(2)
    const cells = rows.map((r) => r.findAll('td').map((c) => c.text()))
    // Alice lives in Asia/Shanghai (UTC+8).
    expect(cells[0]!.slice(0, 5)).toEqual(['My bookings', '—', 'lgf_aaaa1111…', 'Nov 30, 2026, 9:00 AM', 'Active'])
    expect(cells[1]!.slice(0, 5)).toEqual([
      'Pool',
      'MI300X ×1 · tor1',
      'lgf_bbbb2222…',
      'Nov 1, 2026, 9:00 AM',
      'Revoked Nov 3, 2026, 12:30 AM',
    ])
    // Only a live feed can be revoked.
    expect(rows[0]!.find('[data-testid=feed-revoke]').attributes('aria-label')).toBe('Revoke feed lgf_aaaa1111…')
    expect(rows[1]!.find('[data-testid=feed-revoke]').exists()).toBe(false)
  })

  it('speaks Simplified Chinese', async () => {
    const wrapper = await mountView('zh-CN')
    expect(wrapper.get('h1').text()).toBe('日历订阅')
    expect(wrapper.get('[data-testid=feed-table] tbody tr').find('td').text()).toBe('我的预约')
  })

  it('shows loading, then the empty state', async () => {
    let resolve: (v: CalendarFeed[]) => void = () => {}
    api.listFeeds.mockReturnValue(new Promise<CalendarFeed[]>((r) => (resolve = r)))
    const wrapper = mountWithApp(FeedListView)
    await flushPromises()
    expect(wrapper.text()).toContain('Loading…')
    resolve([])
    await flushPromises()
    expect(wrapper.get('[data-testid=feed-empty]').text()).toBe('No feeds yet.')
    expect(wrapper.find('[data-testid=feed-table]').exists()).toBe(false)
  })

  it('shows an API error for the list the way other views do', async () => {
    api.listFeeds.mockRejectedValue(new ApiError(429, { message: 'Slow down.', code: 'throttled' }))
    const wrapper = await mountView()
    expect(wrapper.get('[role=alert]').text()).toBe('Too many requests; wait a moment and try again.')
  })

  it('creates a feed of my bookings and shows its URL once, with a copy button', async () => {
    api.createFeed.mockResolvedValue(created)
    const writeText = vi.fn().mockResolvedValue(undefined)
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true })
    const wrapper = await mountView()
    expect(wrapper.find('[data-testid=feed-created]').exists()).toBe(false)

    await wrapper.get('form').trigger('submit')
    await flushPromises()
    expect(api.createFeed).toHaveBeenCalledWith({ kind: 'user' })
    expect(api.listFeeds).toHaveBeenCalledTimes(2)
    const box = wrapper.get('[data-testid=feed-created]')
    expect(box.get('[data-testid=feed-url]').text()).toBe(created.url)
    expect(box.text()).toContain('it will not be shown again')
    expect(box.text()).toContain('Google Calendar')
    expect(box.text()).toContain('revoke the feed')
    expect(document.activeElement).toBe(box.element)

    await box.get('[data-testid=feed-copy]').trigger('click')
    await flushPromises()
    expect(writeText).toHaveBeenCalledWith(created.url)
  })

  it('creates a feed for one pool chosen from the pools the user can see', async () => {
    api.createFeed.mockResolvedValue({ ...created, kind: 'pool', pool: 2, pool_name: pool.name })
    const wrapper = await mountView()
    expect(wrapper.find('#feed-pool').exists()).toBe(false)
    await wrapper.get('#feed-kind-pool').setValue(true)
    const options = wrapper.findAll('#feed-pool option')
    expect(options.map((o) => o.text())).toEqual(['Choose a pool', 'MI300X ×1 · tor1'])
    await wrapper.get('#feed-pool').setValue('2')
    await wrapper.get('form').trigger('submit')
    await flushPromises()
    expect(api.createFeed).toHaveBeenCalledWith({ kind: 'pool', pool: 2 })
  })

  it('shows the API’s field errors when creating fails', async () => {
    api.createFeed.mockRejectedValue(
      new ApiError(400, { message: 'Pick the pool to follow.', code: 'required', extra: { fields: { pool: ['Pick the pool to follow.'] } } }),
    )
    const wrapper = await mountView()
    await wrapper.get('#feed-kind-pool').setValue(true)
    await wrapper.get('form').trigger('submit')
    await flushPromises()
    expect(wrapper.get('[data-testid=form-error]').text()).toBe('Pick the pool to follow.')
    expect(wrapper.get('[data-testid=field-error][data-field=feed-pool]').text()).toBe('Pick the pool to follow.')
    expect(wrapper.get('#feed-pool').attributes('aria-invalid')).toBe('true')
    expect(wrapper.find('[data-testid=feed-created]').exists()).toBe(false)
  })

  it('revokes a feed only after confirmation, and hides its one-time URL', async () => {
    api.createFeed.mockResolvedValue(created)
    api.revokeFeed.mockResolvedValue(undefined)
    const native = vi.fn()
    vi.stubGlobal('confirm', native)
    const wrapper = await mountView()
    const dialog = useConfirmStore()
    await wrapper.get('form').trigger('submit')
    await flushPromises()

    // The app's own dialog asks (never window.confirm); cancelling it revokes nothing.
    const button = () => wrapper.get('[data-feed-id="5"] [data-testid=feed-revoke]')
    await button().trigger('click')
    expect(dialog.pending?.message).toBe('Revoke this feed? Calendars subscribed to it will stop updating.')
    dialog.answer(false)
    await flushPromises()
    expect(api.revokeFeed).not.toHaveBeenCalled()

    await button().trigger('click')
    dialog.answer(true)
    await flushPromises()
    expect(api.revokeFeed).toHaveBeenCalledWith(5)
    expect(native).not.toHaveBeenCalled()
    // Revoking another feed leaves the new URL on screen.
    expect(wrapper.find('[data-testid=feed-created]').exists()).toBe(true)
  })

  it('forgets the one-time URL when that very feed is revoked', async () => {
    api.createFeed.mockResolvedValue(created)
    api.revokeFeed.mockResolvedValue(undefined)
    const wrapper = await mountView()
    api.listFeeds.mockResolvedValue([created, mine])
    await wrapper.get('form').trigger('submit')
    await flushPromises()
    expect(wrapper.find('[data-testid=feed-created]').exists()).toBe(true)
    await wrapper.get('[data-feed-id="6"] [data-testid=feed-revoke]').trigger('click')
    useConfirmStore().answer(true)
    await flushPromises()
    expect(api.revokeFeed).toHaveBeenCalledWith(6)
    expect(wrapper.find('[data-testid=feed-created]').exists()).toBe(false)
  })
})

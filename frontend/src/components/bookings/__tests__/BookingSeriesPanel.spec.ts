import { flushPromises } from '@vue/test-utils'
import { afterEach, describe, expect, it, vi } from 'vitest'

import type { Booking, Me, Series } from '@/api/types'
import { alice, mountWithApp } from '@/__tests__/helpers'
import { useConfirmStore } from '@/stores/confirm'

const api = vi.hoisted(() => ({
  getSeries: vi.fn(),
  decideSeries: vi.fn(async () => ({ approved: [], rejected: [11, 12] })),
  cancelSeries: vi.fn(),
}))
vi.mock('@/api/bookings', () => api)

const { default: BookingSeriesPanel } = await import('../BookingSeriesPanel.vue')

const bob: Me = {
  ...alice,
  id: 4,
  username: 'bob',
  memberships: [{ id: 2, lab: { id: 1, name: 'Vision Lab', slug: 'vision' }, role: 'lab_admin' }],
}
const booking = {
  id: 11,
  series: 7,
  lab: { id: 1, name: 'Vision Lab', slug: 'vision' },
  user: { id: 3, username: 'alice' },
} as unknown as Booking
const series = {
  id: 7,
  frequency: 'weekly',
  count: 2,
  until: null,
  timezone: 'Asia/Shanghai',
  occurrences: [
    { start: '2026-12-07T01:00:00Z', end: '2026-12-07T05:00:00Z', booking: 11, status: 'pending', message: '' },
    { start: '2026-12-14T01:00:00Z', end: '2026-12-14T05:00:00Z', booking: 12, status: 'pending', message: '' },
  ],
} as unknown as Series

describe('BookingSeriesPanel', () => {
  afterEach(() => {
    vi.clearAllMocks()
    vi.unstubAllGlobals()
  })

  it('asks a lab admin for the reason of a series rejection in the app’s dialog, in their language', async () => {
    api.getSeries.mockResolvedValue(series)
    const prompt = vi.fn(() => 'from the browser')
    vi.stubGlobal('prompt', prompt)
    const wrapper = mountWithApp(BookingSeriesPanel, { props: { booking, changeable: false }, me: bob, locale: 'zh-CN', global: { stubs: { RouterLink: true } } })
    await flushPromises()
    await wrapper.get('[data-testid=series-reject]').trigger('click')
    const dialog = useConfirmStore()
    expect(prompt).not.toHaveBeenCalled()
    expect(dialog.pending?.reasonLabel).toBe('拒绝理由（研究人员会看到）')
    expect(dialog.pending?.message).toContain('alice')
    // Cancelled: nothing is rejected.
    dialog.answer(false)
    await flushPromises()
    expect(api.decideSeries).not.toHaveBeenCalled()
    // Given a reason: the series is rejected with it.
    await wrapper.get('[data-testid=series-reject]').trigger('click')
    dialog.reason = '  GPU time goes to the deadline  '
    dialog.answer(true)
    await flushPromises()
    expect(api.decideSeries).toHaveBeenCalledWith(7, 'reject', 'GPU time goes to the deadline')
  })
})

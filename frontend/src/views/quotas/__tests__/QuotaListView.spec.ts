import { flushPromises } from '@vue/test-utils'
import { afterEach, describe, expect, it, vi } from 'vitest'

import { alice, mountWithApp } from '@/__tests__/helpers'
import { resetCatalog } from '@/composables/useCatalog'

const api = vi.hoisted(() => ({ listQuotas: vi.fn(async () => []) }))
vi.mock('@/api/quotas', () => ({
  listQuotas: api.listQuotas,
  listQuotaRequests: async () => [],
  createQuotaRequest: vi.fn(),
  setQuota: vi.fn(),
}))
vi.mock('@/api/labs', () => ({ listLabs: async () => [] }))
vi.mock('@/api/catalog', () => ({ listPools: async () => [], listInstanceTypes: async () => [], listLabs: async () => [] }))

const { default: QuotaListView } = await import('../QuotaListView.vue')

// Dave, a lab admin in Toronto, at 21:00 on Nov 30 his time: 02:00 UTC on Dec 1.
const dave = {
  ...alice,
  username: 'dave',
  timezone: 'America/Toronto' as const,
  memberships: [{ id: 1, lab: alice.memberships[0]!.lab, role: 'lab_admin' as const }],
}

describe('QuotaListView', () => {
  afterEach(() => {
    vi.useRealTimers()
    vi.clearAllMocks()
  })

  it('opens on the quota month in effect (UTC), which new bookings are charged to and requests may name', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(new Date('2026-12-01T02:00:00Z'))
    resetCatalog()
    const wrapper = mountWithApp(QuotaListView, { me: dave })
    await flushPromises()
    expect((wrapper.get('#quota-month').element as HTMLInputElement).value).toBe('2026-12')
    expect(api.listQuotas).toHaveBeenCalledWith({ lab: 1, month: '2026-12-01' })
    // November is over for the server (`month_in_past`): the request form must not offer it.
    expect((wrapper.get('#qr-month').element as HTMLInputElement).value).toBe('2026-12')
  })
})

import { effectScope } from 'vue'
import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

import { alice } from '@/__tests__/helpers'
import { useSessionStore } from '@/stores/session'
import { monthOf, monthParam } from '@/utils/time'

const listQuotas = vi.fn()
vi.mock('@/api/quotas', () => ({ listQuotas: (...args: unknown[]) => listQuotas(...args) }))

const { prefetchMyMonthQuotas, useMyMonthQuotas } = await import('../useMyMonthQuotas')

const twoLabs = {
  ...alice,
  memberships: [...alice.memberships, { id: 2, lab: { id: 7, name: 'NLP Lab', slug: 'nlp' }, role: 'member' as const }],
}

function mount() {
  const scope = effectScope()
  const resource = scope.run(() => useMyMonthQuotas())!
  return { resource, scope }
}

describe('useMyMonthQuotas', () => {
  beforeEach(() => setActivePinia(createPinia()))
  afterEach(() => listQuotas.mockReset())

  it('reads each of my labs for the quota month in effect, and takes the read started before the mount', async () => {
    const session = useSessionStore()
    session.setMe(twoLabs)
    listQuotas.mockImplementation(async ({ lab }: { lab: number }) => [{ id: lab * 10 }])
    prefetchMyMonthQuotas(session)
    const month = monthParam(monthOf(new Date(), 'UTC'))
    expect(listQuotas.mock.calls.map(([q]) => q)).toEqual([{ lab: 1, month }, { lab: 7, month }])
    const { resource, scope } = mount()
    await vi.waitFor(() => expect(resource.data.value).toEqual([{ id: 10 }, { id: 70 }]))
    expect(listQuotas).toHaveBeenCalledTimes(2)
    // Later reloads ask the server: the early answer is used once.
    await resource.reload()
    expect(listQuotas).toHaveBeenCalledTimes(4)
    scope.stop()
  })

  it('reads the UTC month the quotas are kept in, not the month on my clock', async () => {
    // 20:00 UTC on Nov 30 is already Dec 1 in Shanghai, but bookings now still spend November's quota.
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(new Date('2026-11-30T20:00:00Z'))
    try {
      const session = useSessionStore()
      session.setMe(alice)
      listQuotas.mockResolvedValue([])
      const { resource, scope } = mount()
      await vi.waitFor(() => expect(resource.data.value).toEqual([]))
      expect(listQuotas).toHaveBeenCalledWith({ lab: 1, month: '2026-11-01' })
      scope.stop()
    } finally {
      vi.useRealTimers()
    }
  })

  it('asks again when the session changed after the early read (another person, other labs)', async () => {
    const session = useSessionStore()
    session.setMe(twoLabs)
    listQuotas.mockResolvedValue([])
    prefetchMyMonthQuotas(session)
    session.setMe(alice)
    const { resource, scope } = mount()
    await vi.waitFor(() => expect(resource.data.value).toEqual([]))
    expect(listQuotas.mock.calls.map(([q]) => q.lab)).toEqual([1, 7, 1])
    scope.stop()
  })
})

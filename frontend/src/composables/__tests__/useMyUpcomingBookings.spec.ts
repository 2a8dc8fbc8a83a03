import { effectScope } from 'vue'
import { afterEach, describe, expect, it, vi } from 'vitest'

const listBookings = vi.fn()
vi.mock('@/api/bookings', () => ({ listBookings: (...args: unknown[]) => listBookings(...args) }))

const { prefetchMyUpcomingBookings, useMyUpcomingBookings } = await import('../useMyUpcomingBookings')

const later = new Date(Date.now() + 3_600_000).toISOString()
const page = (ids: number[]) => ({ count: ids.length, results: ids.map((id) => ({ id, status: 'scheduled', end: later })) })

function mount() {
  const scope = effectScope()
  const resource = scope.run(() => useMyUpcomingBookings())!
  return { resource, scope }
}

describe('useMyUpcomingBookings', () => {
  afterEach(() => {
    listBookings.mockReset()
    vi.useRealTimers()
  })

  it('takes the read started before the page mounted instead of asking again', async () => {
    listBookings.mockResolvedValueOnce(page([1, 2]))
    prefetchMyUpcomingBookings()
    const { resource, scope } = mount()
    await vi.waitFor(() => expect(resource.data.value?.map((b) => b.id)).toEqual([1, 2]))
    expect(listBookings).toHaveBeenCalledTimes(1)
    // The next mount (or reload) asks the server: the early answer is used once.
    listBookings.mockResolvedValueOnce(page([3]))
    await resource.reload()
    expect(resource.data.value?.map((b) => b.id)).toEqual([3])
    scope.stop()
  })

  it('asks again when the early read failed (signed out then) or is old', async () => {
    listBookings.mockRejectedValueOnce(new Error('401'))
    prefetchMyUpcomingBookings()
    await new Promise((settled) => setTimeout(settled, 0)) // the 401 came back before sign-in
    listBookings.mockResolvedValueOnce(page([4]))
    let { resource, scope } = mount()
    await vi.waitFor(() => expect(resource.data.value?.map((b) => b.id)).toEqual([4]))
    scope.stop()

    vi.useFakeTimers()
    listBookings.mockResolvedValueOnce(page([5]))
    prefetchMyUpcomingBookings()
    vi.advanceTimersByTime(60_000)
    listBookings.mockResolvedValueOnce(page([6]))
    ;({ resource, scope } = mount())
    vi.useRealTimers()
    await vi.waitFor(() => expect(resource.data.value?.map((b) => b.id)).toEqual([6]))
    scope.stop()
  })
})

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

import { compactRows, listPoolWindow } from '../bookings'
import type { CompactBookings } from '../types'

// As GET /api/v1/bookings/compact/ answers (backend/labgpu/bookings/selectors.bookings_compact).
const answer: CompactBookings = {
  pool: 3,
  count: 2,
  labs: [
    { id: 1, name: 'Vision Lab', slug: 'vision' },
    { id: 2, name: 'Language Lab', slug: 'language' },
  ],
  users: [
    { id: 10, username: 'alice', first_name: '', last_name: '' },
    { id: 11, username: 'bob', first_name: 'Bob', last_name: 'B' },
  ],
  bookings: [
    { id: 5, lab: 2, user: 11, start: '2027-01-01T09:00:00Z', end: '2027-01-01T11:00:00Z', pending_end: null, status: 'scheduled', purpose: '训练', series: null, gpu_count: 1, on_demand: false },
    { id: 4, lab: 1, user: 10, start: '2027-01-02T09:00:00.250000Z', end: '2027-01-02T10:00:00Z', pending_end: '2027-01-02T12:00:00Z', status: 'pending', purpose: '', series: 9, gpu_count: 2, on_demand: true },
  ],
}

describe('the compact pool-window list', () => {
  const seen: Request[] = []

  beforeEach(() => {
    seen.length = 0
    vi.stubGlobal('fetch', async (input: RequestInfo | URL) => {
      seen.push(input as Request)
      return new Response(JSON.stringify(answer), { status: 200, headers: { 'Content-Type': 'application/json' } })
    })
  })
  afterEach(() => vi.unstubAllGlobals())

  it('asks for one pool and window, each status as its own parameter', async () => {
    const got = await listPoolWindow({
      pool: 3,
      start_after: '2027-01-01T00:00:00.000Z',
      end_before: '2027-02-01T00:00:00.000Z',
      status: ['scheduled', 'pending'],
      mine: true,
    })
    expect(got).toEqual(answer)
    const url = new URL(seen[0]!.url)
    expect(url.pathname).toBe('/api/v1/bookings/compact/')
    expect(url.searchParams.get('pool')).toBe('3')
    expect(url.searchParams.getAll('status')).toEqual(['scheduled', 'pending'])
    expect(url.searchParams.get('mine')).toBe('true')
    expect(url.searchParams.get('start_after')).toBe('2027-01-01T00:00:00.000Z')
  })

  it('makes table rows with each booking’s own lab, in the answer’s order', () => {
    expect(compactRows(answer, 'MI300X tor1')).toEqual([
      { id: 5, pool_name: 'MI300X tor1', start: '2027-01-01T09:00:00Z', end: '2027-01-01T11:00:00Z', purpose: '训练', status: 'scheduled', lab: { name: 'Language Lab' } },
      { id: 4, pool_name: 'MI300X tor1', start: '2027-01-02T09:00:00.250000Z', end: '2027-01-02T10:00:00Z', purpose: '', status: 'pending', lab: { name: 'Vision Lab' } },
    ])
  })
})

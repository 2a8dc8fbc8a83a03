import { describe, expect, it } from 'vitest'

import { canCancel, canChange, canEndEarly, canExtend, onDemandWindow, estimateBooking, quotaShares, statusTimeline } from '../booking'

describe('booking estimate', () => {
  it('counts GPU-hours per GPU and cost per node-hour', () => {
    expect(estimateBooking(3, { gpu_count: 8, price_per_hour: '15.92' })).toEqual({ gpuHours: 24, cost: 47.76 })
  })

  it('has nothing to say about an empty or reversed window', () => {
    expect(estimateBooking(0, { gpu_count: 1, price_per_hour: '1.99' })).toBeNull()
    expect(estimateBooking(-2, { gpu_count: 1, price_per_hour: '1.99' })).toBeNull()
    expect(estimateBooking(2, undefined)).toBeNull()
  })
})

describe('quota bar', () => {
  it('splits a quota into used and booked shares that never pass 100%', () => {
    expect(quotaShares({ gpu_hours: '400', used_gpu_hours: '100', committed_gpu_hours: '50' })).toEqual({ used: 0.25, committed: 0.125 })
    const full = quotaShares({ gpu_hours: '10', used_gpu_hours: '8', committed_gpu_hours: '8' })
    expect(full.used).toBe(0.8)
    expect(full.committed).toBeCloseTo(0.2)
    expect(quotaShares({ gpu_hours: '0', used_gpu_hours: '0', committed_gpu_hours: '0' })).toEqual({ used: 0, committed: 0 })
  })
})

describe('status timeline', () => {
  it('marks steps before the current one as done', () => {
    const steps = statusTimeline('provisioning', true)
    expect(steps.map((s) => `${s.status}:${s.state}`)).toEqual([
      'pending:done',
      'scheduled:done',
      'provisioning:current',
      'ready:todo',
      'ending:todo',
      'completed:todo',
    ])
  })

  it('leaves out approval for pools that do not need it', () => {
    expect(statusTimeline('scheduled', false)[0]).toEqual({ status: 'scheduled', state: 'current' })
  })

  it('ends in the side exit a booking took', () => {
    const steps = statusTimeline('rejected', true)
    expect(steps.at(-1)).toEqual({ status: 'rejected', state: 'failed' })
    expect(steps).toHaveLength(1)
  })

  it('offers only the actions the lifecycle allows', () => {
    expect(canCancel({ status: 'scheduled' })).toBe(true)
    expect(canCancel({ status: 'ready' })).toBe(false)
    expect(canEndEarly({ status: 'ready' })).toBe(true)
    expect(canExtend({ status: 'completed' })).toBe(false)
  })
})

describe('canChange (the server lets the owner, the lab’s admins and site admins change a booking)', () => {
  const labmates = { user: { id: 7 }, lab: { id: 1 } }
  it('offers nothing to a researcher on a labmate’s booking', () => {
    expect(canChange(labmates, { id: 3, isSiteAdmin: false, adminLabIds: [] })).toBe(false)
  })
  it('lets the owner, the lab admin and a site admin change it', () => {
    expect(canChange(labmates, { id: 7, isSiteAdmin: false, adminLabIds: [] })).toBe(true)
    expect(canChange(labmates, { id: 4, isSiteAdmin: false, adminLabIds: [1] })).toBe(true)
    expect(canChange(labmates, { id: 4, isSiteAdmin: false, adminLabIds: [2] })).toBe(false)
    expect(canChange(labmates, { id: 9, isSiteAdmin: true, adminLabIds: [] })).toBe(true)
  })
})

describe('onDemandWindow ("Start now")', () => {
  it('starts this minute and ends on the pool grid at least the length later', () => {
    const now = new Date('2026-12-01T10:07:30Z')
    const w = onDemandWindow({ granularity_minutes: 30 }, 4 * 3600_000, now)
    expect(w.start.toISOString()).toBe('2026-12-01T10:07:00.000Z')
    expect(w.end.toISOString()).toBe('2026-12-01T14:30:00.000Z')
  })
  it('never books less than the pool minimum', () => {
    const w = onDemandWindow({ granularity_minutes: 15, min_duration_minutes: 120 }, 30 * 60_000, new Date('2026-12-01T10:00:00Z'))
    expect(w.end.toISOString()).toBe('2026-12-01T12:00:00.000Z')
  })
})

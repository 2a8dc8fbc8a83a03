import { describe, expect, it } from 'vitest'

import type { Blackout, BusyBlock } from '@/api/types'
import { assignLanes, freeWindows, laneCountFor, laneResources, monthSummaryEvents, toCalendarEvents } from '../calendar'

const labels = { mine: 'Mine', busy: 'Busy', blackout: 'Maintenance', lane: (n: number) => `Node ${n}` }

function block(start: string, end: string, extra: Partial<BusyBlock> = {}): BusyBlock {
  return { start, end, reserved_start: start, reserved_end: end, status: 'scheduled', mine: false, booking: null, lab: null, series: null, ...extra }
}

describe('capacity lanes', () => {
  it('never puts two overlapping bookings in one lane', () => {
    const lanes = assignLanes([
      block('2026-12-01T00:00:00Z', '2026-12-01T04:00:00Z'),
      block('2026-12-01T01:00:00Z', '2026-12-01T02:00:00Z'),
      block('2026-12-01T02:00:00Z', '2026-12-01T05:00:00Z'),
      block('2026-12-01T04:00:00Z', '2026-12-01T06:00:00Z'),
    ])
    expect(lanes.map((l) => l.lane)).toEqual([1, 2, 2, 1])
  })

  it('shows at least the pool capacity as lanes, more only if the data needs them', () => {
    const busy = [block('2026-12-01T00:00:00Z', '2026-12-01T04:00:00Z')]
    expect(laneCountFor(busy, 4)).toBe(4)
    expect(laneCountFor([...busy, ...busy], 1)).toBe(2)
    expect(laneResources(2, 2, labels)).toEqual([
      { id: 'lane-1', title: 'Node 1' },
      { id: 'lane-2', title: 'Node 2' },
    ])
  })
})

describe('calendar events', () => {
  it('shows other labs as anonymous busy blocks and mine as mine (I-6)', () => {
    const events = toCalendarEvents(
      [
        block('2026-12-01T00:00:00Z', '2026-12-01T02:00:00Z', { mine: true, booking: 7, lab: { id: 1, name: 'Vision Lab' } }),
        block('2026-12-01T01:00:00Z', '2026-12-01T03:00:00Z'),
        block('2026-12-01T01:00:00Z', '2026-12-01T03:00:00Z', { booking: 9, lab: { id: 1, name: 'Vision Lab' } }),
      ],
      [],
      3,
      'Asia/Shanghai',
      labels,
    )
    expect(events.map((e) => e.title)).toEqual(['Mine', 'Busy', 'Vision Lab'])
    expect(events[0]).toMatchObject({ id: 'booking-7', start: '2026-12-01 08:00:00', resourceIds: ['lane-1'] })
    expect(events[1]!.classNames).toContain('ev-other')
    // A labmate's booking is neither mine nor another lab's: it has its own colour (bug 9).
    expect(events[2]!.classNames).toContain('ev-lab')
    expect(events[2]!.extendedProps).toMatchObject({ kind: 'lab', booking: 9, node: 'Node 3' })
  })

  it('shades blackouts across every lane', () => {
    const blackout: Blackout = { id: 3, pool: 1, start: '2026-12-02T00:00:00Z', end: '2026-12-02T06:00:00Z', reason: 'Firmware' }
    const [event] = toCalendarEvents([], [blackout], 2, 'UTC', labels)
    expect(event).toMatchObject({
      display: 'background',
      resourceIds: ['lane-1', 'lane-2'],
      title: 'Maintenance: Firmware',
      start: '2026-12-02 00:00:00',
    })
  })
})

describe('month summaries', () => {
  const monthLabels = {
    day: (count: number, peak: number, capacity: number) => `${count} · ${peak}/${capacity}`,
    mine: (count: number) => `mine ${count}`,
  }

  it('sums each day: bookings, peak concurrency and mine, in the user’s zone', () => {
    const events = monthSummaryEvents(
      [
        block('2026-12-01T01:00:00Z', '2026-12-01T03:00:00Z', { mine: true }),
        block('2026-12-01T02:00:00Z', '2026-12-01T04:00:00Z'),
        block('2026-12-01T05:00:00Z', '2026-12-01T06:00:00Z'),
      ],
      2,
      'UTC',
      monthLabels,
    )
    expect(events.map((e) => [e.id, e.title, e.classNames])).toEqual([
      ['day-2026-12-01', '3 · 2/2', ['ev-summary', 'ev-summary-full']],
      ['mine-2026-12-01', 'mine 1', ['ev-mine']],
    ])
  })

  it('counts a booking across midnight on both days of the user’s calendar', () => {
    // 15:00–17:00 UTC is 23:00–01:00 in Shanghai.
    const events = monthSummaryEvents([block('2026-12-01T15:00:00Z', '2026-12-01T17:00:00Z')], 4, 'Asia/Shanghai', monthLabels)
    expect(events.map((e) => e.id)).toEqual(['day-2026-12-01', 'day-2026-12-02'])
    expect(events.every((e) => e.classNames?.includes('ev-summary-free'))).toBe(true)
  })
})

describe('changeover (issue 14 bug 10)', () => {
  it('bands each booking with its setup and teardown, and the margins a neighbour needs', () => {
    const busy = [block('2026-12-01T10:00:00Z', '2026-12-01T11:00:00Z', { reserved_start: '2026-12-01T09:50:00Z', reserved_end: '2026-12-01T11:05:00Z' })]
    const bands = toCalendarEvents(busy, [], 1, 'UTC', labels, { lead: 10, grace: 5 }).filter((e) => e.classNames?.includes('ev-changeover'))
    expect(bands.map((b) => [b.start, b.end])).toEqual([
      ['2026-12-01 09:45:00', '2026-12-01 10:00:00'],
      ['2026-12-01 11:00:00', '2026-12-01 11:15:00'],
    ])
  })

  it('packs lanes by what bookings hold, not by their start and end', () => {
    const a = block('2026-12-01T10:00:00Z', '2026-12-01T11:00:00Z', { reserved_end: '2026-12-01T11:05:00Z' })
    const b = block('2026-12-01T11:00:00Z', '2026-12-01T12:00:00Z')
    expect(laneCountFor([a, b], 1)).toBe(2)
  })
})

describe('free windows a keyboard user may book', () => {
  const rules = { capacity: 2, granularity: 60, minDuration: 60, maxDuration: 8 * 60, lead: 0, grace: 0 }
  const day = { from: '2026-12-01T00:00:00Z', to: '2026-12-02T00:00:00Z' }
  const reserved = (start: string, end: string) => ({ reserved_start: start, reserved_end: end })

  it('offers an empty day in max-duration pieces with every node free', () => {
    expect(freeWindows([], [], rules, day, 'UTC')).toEqual([
      { start: '2026-12-01T00:00:00.000Z', end: '2026-12-01T08:00:00.000Z', free: 2 },
      { start: '2026-12-01T08:00:00.000Z', end: '2026-12-01T16:00:00.000Z', free: 2 },
      { start: '2026-12-01T16:00:00.000Z', end: '2026-12-02T00:00:00.000Z', free: 2 },
    ])
  })

  it('never offers a period where every node is held, and says how many nodes stay free', () => {
    const busy = [reserved('2026-12-01T02:00:00Z', '2026-12-01T04:00:00Z'), reserved('2026-12-01T03:00:00Z', '2026-12-01T05:00:00Z')]
    const windows = freeWindows(busy, [], { ...rules, maxDuration: 24 * 60 }, day, 'UTC')
    expect(windows).toEqual([
      { start: '2026-12-01T00:00:00.000Z', end: '2026-12-01T02:00:00.000Z', free: 2 },
      { start: '2026-12-01T02:00:00.000Z', end: '2026-12-01T03:00:00.000Z', free: 1 },
      { start: '2026-12-01T04:00:00.000Z', end: '2026-12-01T05:00:00.000Z', free: 1 },
      { start: '2026-12-01T05:00:00.000Z', end: '2026-12-02T00:00:00.000Z', free: 2 },
    ])
  })

  it('counts every booking the window meets, so a node is free over all of it whatever its slot', () => {
    // Two short bookings one after the other: never two at once, but both meet 02:00–06:00.
    const busy = [reserved('2026-12-01T02:00:00Z', '2026-12-01T03:00:00Z'), reserved('2026-12-01T05:00:00Z', '2026-12-01T06:00:00Z')]
    const windows = freeWindows(busy, [], { ...rules, capacity: 1, maxDuration: 24 * 60 }, day, 'UTC')
    expect(windows.map((w) => [w.start.slice(11, 16), w.end.slice(11, 16)])).toEqual([
      ['00:00', '02:00'],
      ['03:00', '05:00'],
      ['06:00', '00:00'],
    ])
  })

  it('keeps the changeover: a new booking’s setup and teardown may not meet another’s reserved period', () => {
    const busy = [reserved('2026-12-01T04:00:00Z', '2026-12-01T06:00:00Z')]
    const windows = freeWindows(busy, [], { ...rules, capacity: 1, lead: 30, grace: 60, maxDuration: 24 * 60 }, day, 'UTC')
    // Ending at 03:00 leaves its teardown until 04:00; starting at 07:00 puts its setup after 06:00.
    expect(windows.map((w) => [w.start.slice(11, 16), w.end.slice(11, 16)])).toEqual([
      ['00:00', '03:00'],
      ['07:00', '00:00'],
    ])
  })

  it('never meets a blackout, starts on the grid after `from`, and lasts at least the minimum', () => {
    const blackouts = [{ start: '2026-12-01T10:30:00Z', end: '2026-12-01T12:00:00Z' }]
    const windows = freeWindows([], blackouts, { ...rules, minDuration: 120, maxDuration: 24 * 60 }, { from: '2026-12-01T07:10:00Z', to: day.to }, 'UTC')
    expect(windows).toEqual([
      { start: '2026-12-01T08:00:00.000Z', end: '2026-12-01T10:00:00.000Z', free: 2 },
      { start: '2026-12-01T12:00:00.000Z', end: '2026-12-02T00:00:00.000Z', free: 2 },
    ])
  })

  it('ends each window at midnight of the user’s zone', () => {
    const windows = freeWindows([], [], { ...rules, maxDuration: 48 * 60 }, day, 'Asia/Shanghai')
    expect(windows.map((w) => [w.start, w.end])).toEqual([
      ['2026-12-01T00:00:00.000Z', '2026-12-01T16:00:00.000Z'],
      ['2026-12-01T16:00:00.000Z', '2026-12-02T00:00:00.000Z'],
    ])
  })
})

describe('series on the calendar', () => {
  it('marks an occurrence of a series, and nothing else', () => {
    const events = toCalendarEvents(
      [
        block('2026-12-01T01:00:00Z', '2026-12-01T02:00:00Z', { mine: true, booking: 7, series: 3 }),
        block('2026-12-01T03:00:00Z', '2026-12-01T04:00:00Z', { mine: true, booking: 8 }),
      ],
      [],
      1,
      'UTC',
      labels,
    )
    expect(events.map((e) => !!e.classNames?.includes('ev-series'))).toEqual([true, false])
    expect(events[0]!.extendedProps!.series).toBe(3)
  })
})

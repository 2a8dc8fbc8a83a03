import type { Blackout, BusyBlock } from '@/api/types'
import { toCalendarString } from './time'

export type CalendarView = 'resourceTimeGridDay' | 'resourceTimelineWeek' | 'dayGridMonth'

export interface LaneAssigned<T> {
  item: T
  lane: number // 1-based
}

/**
 * Put each busy block in the lowest-numbered lane that is free when it starts (interval
 * partitioning), so a pool of capacity N reads as N lanes. Blocks beyond N (which the backend
 * should never allow) go into extra lanes rather than vanish.
 */
export function assignLanes<T extends { start: string; end: string }>(items: readonly T[]): LaneAssigned<T>[] {
  const sorted = [...items].sort(
    (a, b) => Date.parse(a.start) - Date.parse(b.start) || Date.parse(a.end) - Date.parse(b.end),
  )
  const laneEnds: number[] = []
  return sorted.map((item) => {
    const start = Date.parse(item.start)
    let lane = laneEnds.findIndex((end) => end <= start)
    if (lane === -1) lane = laneEnds.length
    laneEnds[lane] = Date.parse(item.end)
    return { item, lane: lane + 1 }
  })
}

export interface CalendarLabels {
  mine: string
  busy: string
  blackout: string
  changeover?: string
  lane: (n: number) => string
}

/** The pool's changeover: minutes a node needs to be set up before a booking and torn down after. */
export interface Changeover {
  lead: number
  grace: number
}

/** What a booking really holds of its pool: its reserved period (falls back to start–end). */
function held(item: Pick<BusyBlock, 'start' | 'end'> & Partial<Pick<BusyBlock, 'reserved_start' | 'reserved_end'>>) {
  return { start: item.reserved_start ?? item.start, end: item.reserved_end ?? item.end }
}

const shift = (iso: string, minutes: number) => new Date(Date.parse(iso) + minutes * 60_000).toISOString()

export interface CalendarEventInput {
  id: string
  start: string
  end: string
  title: string
  resourceIds: string[]
  display?: 'auto' | 'background'
  allDay?: boolean
  classNames?: string[]
  extendedProps?: Record<string, unknown>
}

/** Other labs' blocks carry no lab (I-6); our labs' carry `{id, name}`. */
function labName(lab: BusyBlock['lab']): string | null {
  return lab && typeof lab.name === 'string' ? lab.name : null
}

/**
 * Whose a busy block is, as the legend tells them apart: the user's own, a labmate's (its id is
 * sent, so it may be opened) or another lab's (anonymous, I-6).
 */
export type BookingKind = 'mine' | 'lab' | 'other'
export function bookingKind(item: Pick<BusyBlock, 'mine' | 'booking'>): BookingKind {
  if (item.mine) return 'mine'
  return item.booking != null ? 'lab' : 'other'
}

export const laneId = (n: number) => `lane-${n}`

export function laneResources(capacity: number, used: number, labels: CalendarLabels) {
  const n = Math.max(capacity, used, 1)
  return Array.from({ length: n }, (_, i) => ({ id: laneId(i + 1), title: labels.lane(i + 1) }))
}

/** Busy blocks and blackouts as calendar events, in the wall clock of `timeZone`. */
export function toCalendarEvents(
  busy: readonly BusyBlock[],
  blackouts: readonly Blackout[],
  laneCount: number,
  timeZone: string,
  labels: CalendarLabels,
  changeover?: Changeover,
): CalendarEventInput[] {
  // Lanes are packed by the reserved period, as the server packs slots (I-1).
  const lanes = assignLanes(busy.map((item) => ({ ...held(item), item })))
  const events: CalendarEventInput[] = lanes.map(({ item: { item }, lane }, i) => ({
    id: item.booking != null ? `booking-${item.booking}` : `busy-${i}`,
    start: toCalendarString(item.start, timeZone),
    end: toCalendarString(item.end, timeZone),
    title: item.mine ? labels.mine : labName(item.lab) ?? labels.busy,
    resourceIds: [laneId(lane)],
    // An occurrence of a series (our labs' only: others' carry none, I-6) is marked as one.
    classNames: [`ev-${bookingKind(item)}`, `ev-${item.status}`, ...(item.series != null ? ['ev-series'] : [])],
    extendedProps: {
      booking: item.booking,
      series: item.series ?? null,
      mine: item.mine,
      kind: bookingKind(item),
      status: item.status,
      start: item.start,
      end: item.end,
      node: labels.lane(lane),
    },
  }))
  // The changeover around each booking is not free either: its node's setup and teardown, and
  // the teardown and setup a neighbour of the same lane would need (docs/architecture.md, bug 10).
  if (changeover) {
    for (const [i, { item: { item, start, end }, lane }] of lanes.entries()) {
      const bands = [
        [shift(start, -changeover.grace), item.start],
        [item.end, shift(end, changeover.lead)],
      ] as const
      for (const [j, [from, to]] of bands.entries()) {
        if (Date.parse(to) <= Date.parse(from)) continue
        events.push({
          id: `changeover-${i}-${j}`,
          start: toCalendarString(from, timeZone),
          end: toCalendarString(to, timeZone),
          title: labels.changeover ?? '',
          resourceIds: [laneId(lane)],
          display: 'background',
          classNames: ['ev-changeover'],
        })
      }
    }
  }
  const allLanes = Array.from({ length: Math.max(laneCount, 1) }, (_, i) => laneId(i + 1))
  for (const b of blackouts) {
    events.push({
      id: `blackout-${b.id}`,
      start: toCalendarString(b.start, timeZone),
      end: toCalendarString(b.end, timeZone),
      title: b.reason ? `${labels.blackout}: ${b.reason}` : labels.blackout,
      resourceIds: allLanes,
      display: 'background',
      classNames: ['ev-blackout'],
    })
  }
  return events
}

export function laneCountFor(busy: readonly BusyBlock[], capacity: number): number {
  const lanes = assignLanes(busy.map(held)).reduce((max, a) => Math.max(max, a.lane), 0)
  return Math.max(capacity, lanes, 1)
}

export interface MonthLabels {
  day: (count: number, peak: number, capacity: number) => string
  mine: (count: number) => string
}

/**
 * A month of one pool as one summary per day (bookings, peak concurrency, mine) instead of every
 * booking: a month grid cannot show hundreds of bookings usefully, and laying them all out is slow.
 * Days are wall-clock days in `timeZone`; a booking spanning midnight counts on both days.
 */
export function monthSummaryEvents(
  busy: readonly BusyBlock[],
  capacity: number,
  timeZone: string,
  labels: MonthLabels,
): CalendarEventInput[] {
  const days = new Map<string, { count: number; mine: number; edges: [number, number][] }>()
  for (const block of busy) {
    const startWall = toCalendarString(block.start, timeZone)
    const endWall = toCalendarString(new Date(Date.parse(block.end) - 1), timeZone)
    for (let day = startWall.slice(0, 10); day <= endWall.slice(0, 10); day = nextDay(day)) {
      const entry = days.get(day) ?? { count: 0, mine: 0, edges: [] }
      entry.count += 1
      if (block.mine) entry.mine += 1
      // Clip to the day (in wall-clock minutes) for the peak computation.
      const from = day === startWall.slice(0, 10) ? minutesOf(startWall) : 0
      const to = day === endWall.slice(0, 10) ? minutesOf(endWall) + 1 : 24 * 60
      entry.edges.push([from, 1], [to, -1])
      days.set(day, entry)
    }
  }
  const events: CalendarEventInput[] = []
  for (const [day, entry] of days) {
    entry.edges.sort((a, b) => a[0] - b[0] || a[1] - b[1])
    let live = 0
    let peak = 0
    for (const [, delta] of entry.edges) {
      live += delta
      peak = Math.max(peak, live)
    }
    const full = peak >= capacity
    events.push({
      id: `day-${day}`,
      start: `${day} 00:00:00`,
      end: `${nextDay(day)} 00:00:00`,
      title: labels.day(entry.count, peak, capacity),
      resourceIds: [],
      allDay: true,
      classNames: ['ev-summary', full ? 'ev-summary-full' : 'ev-summary-free'],
      extendedProps: { day },
    })
    if (entry.mine) {
      events.push({
        id: `mine-${day}`,
        start: `${day} 00:00:00`,
        end: `${nextDay(day)} 00:00:00`,
        title: labels.mine(entry.mine),
        resourceIds: [],
        allDay: true,
        classNames: ['ev-mine'],
        extendedProps: { day },
      })
    }
  }
  return events
}

function nextDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`)
  d.setUTCDate(d.getUTCDate() + 1)
  return d.toISOString().slice(0, 10)
}

function minutesOf(wall: string): number {
  return Number(wall.slice(11, 13)) * 60 + Number(wall.slice(14, 16))
}

/** The pool's rules a free window must keep to be bookable (minutes, as the pool states them). */
export interface FreeWindowRules {
  capacity: number
  granularity: number
  minDuration: number
  maxDuration: number
  lead: number
  grace: number
}

/** A period a keyboard user may book as it stands: `free` nodes stay free over all of it. */
export interface FreeWindow {
  start: string
  end: string
  free: number
}

/**
 * The free windows of a pool between `from` and `to` (instants), from the same busy blocks,
 * blackouts and changeover the calendar draws, each one the server takes as it stands:
 * on the pool's grid, within its min/max duration, clear of every blackout, and with fewer than
 * `capacity` bookings whose reserved period meets the window's own [start - lead, end + grace).
 * Counting every booking that meets the window (not the peak at one instant) is deliberate: the
 * server holds each booking in one fixed slot over its whole period, so only "fewer bookings than
 * nodes touch it" guarantees one slot is free throughout, however the slots were handed out.
 * A window starts at a grid point, keeps the number of free nodes it starts with, and ends at
 * the first of: a change in that number (a booking starting or ending), the max duration, `to`, or the end of its wall-clock day
 * in `timeZone` (one day per entry reads well in a list). At most `limit` windows.
 */
export function freeWindows(
  busy: readonly Pick<BusyBlock, 'reserved_start' | 'reserved_end'>[],
  blackouts: readonly Pick<Blackout, 'start' | 'end'>[],
  rules: FreeWindowRules,
  range: { from: Date | string; to: Date | string },
  timeZone: string,
  limit = 24,
): FreeWindow[] {
  const minute = 60_000
  const grid = Math.max(1, rules.granularity) * minute
  const shortest = Math.max(grid, Math.ceil(rules.minDuration / rules.granularity) * grid)
  const longest = Math.floor(rules.maxDuration / rules.granularity) * grid
  const from = Math.ceil(new Date(range.from).getTime() / grid) * grid
  const to = new Date(range.to).getTime()
  const held = busy.map((b) => [Date.parse(b.reserved_start), Date.parse(b.reserved_end)] as const)
  const closed = blackouts.map((b) => [Date.parse(b.start), Date.parse(b.end)] as const)
  const taken = (s: number, e: number) => {
    const rs = s - rules.lead * minute
    const re = e + rules.grace * minute
    return held.filter(([bs, be]) => bs < re && be > rs).length
  }
  const blocked = (s: number, e: number) => closed.some(([bs, be]) => bs < e && be > s)
  const day = (t: number) => toCalendarString(new Date(t), timeZone).slice(0, 10)

  const windows: FreeWindow[] = []
  if (longest < shortest) return windows
  let start = from
  while (start + shortest <= to && windows.length < limit) {
    let end = start + shortest
    const used = taken(start, end)
    if (used >= rules.capacity || blocked(start, end) || day(start) !== day(end - 1)) {
      start += grid
      continue
    }
    while (
      end + grid <= to &&
      end + grid - start <= longest &&
      day(end + grid - 1) === day(start) &&
      !blocked(start, end + grid) &&
      taken(start, end + grid) === used &&
      // Where a booking ends, so does the window: the next one then shows the nodes it frees.
      taken(end, end + grid) >= used
    ) {
      end += grid
    }
    windows.push({ start: new Date(start).toISOString(), end: new Date(end).toISOString(), free: rules.capacity - used })
    start = end
  }
  return windows
}

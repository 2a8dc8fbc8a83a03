// Time-zone arithmetic on top of Intl: the API speaks UTC, people read their own zone's wall clock.

export interface WallTime {
  year: number
  month: number // 1-12
  day: number
  hour: number
  minute: number
  second: number
}

const partsFormatters = new Map<string, Intl.DateTimeFormat>()

function partsFormatter(timeZone: string): Intl.DateTimeFormat {
  let f = partsFormatters.get(timeZone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
    partsFormatters.set(timeZone, f)
  }
  return f
}

export function isValidTimeZone(timeZone: string): boolean {
  try {
    partsFormatter(timeZone)
    return true
  } catch {
    return false
  }
}

/** The wall-clock reading in `timeZone` at the instant `date`. */
export function wallTimeIn(date: Date, timeZone: string): WallTime {
  const out: Record<string, number> = {}
  for (const p of partsFormatter(timeZone).formatToParts(date)) {
    if (p.type !== 'literal') out[p.type] = Number(p.value)
  }
  return {
    year: out.year!,
    month: out.month!,
    day: out.day!,
    hour: out.hour! % 24,
    minute: out.minute!,
    second: out.second!,
  }
}

/** Offset of `timeZone` from UTC at `date`, in milliseconds (east positive). */
export function zoneOffsetMs(date: Date, timeZone: string): number {
  const w = wallTimeIn(date, timeZone)
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second)
  return asUtc - (date.getTime() - date.getMilliseconds())
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

/** `timeZone`'s offset at `date` as `±HH:MM` (the calendar widget takes offsets, not zone names). */
export function offsetString(date: Date, timeZone: string): string {
  const minutes = Math.round(zoneOffsetMs(date, timeZone) / 60_000)
  const sign = minutes < 0 ? '-' : '+'
  return `${sign}${pad(Math.floor(Math.abs(minutes) / 60))}:${pad(Math.abs(minutes) % 60)}`
}

/** `YYYY-MM-DDTHH:mm` in `timeZone`, the value format of `<input type="datetime-local">`. */
export function toWallString(date: Date | string, timeZone: string): string {
  const w = wallTimeIn(typeof date === 'string' ? new Date(date) : date, timeZone)
  return `${w.year}-${pad(w.month)}-${pad(w.day)}T${pad(w.hour)}:${pad(w.minute)}`
}

/** The same wall reading, with seconds: the local-time string the calendar widget renders as-is. */
export function toCalendarString(date: Date | string, timeZone: string): string {
  const w = wallTimeIn(typeof date === 'string' ? new Date(date) : date, timeZone)
  return `${w.year}-${pad(w.month)}-${pad(w.day)} ${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}`
}

/**
 * The instant at which the clock in `timeZone` reads `wall` (`YYYY-MM-DDTHH:mm[:ss]`).
 * In a DST gap the clock never reads it; we move forward by the gap, as most calendars do.
 * In a DST overlap it reads it twice; we take the earlier instant.
 */
export function fromWallString(wall: string, timeZone: string): Date {
  const m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?/.exec(wall)
  if (!m) throw new RangeError(`Not a wall time: ${wall}`)
  const [, y, mo, d, h, mi, s] = m
  const naive = Date.UTC(+y!, +mo! - 1, +d!, +h!, +mi!, s ? +s : 0)
  // Offsets a day either side cover any transition near this reading.
  const before = zoneOffsetMs(new Date(naive - 86_400_000), timeZone)
  const after = zoneOffsetMs(new Date(naive + 86_400_000), timeZone)
  const target = wall.slice(0, 16).replace(' ', 'T')
  const valid = [naive - before, naive - after]
    .filter((t) => toWallString(new Date(t), timeZone) === target)
    .sort((a, b) => a - b)
  return new Date(valid[0] ?? naive - before)
}

/** A Date whose *browser-local* fields spell the wall time (for widgets that only know local time). */
export function wallToLocalDate(wall: string): Date {
  const m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?/.exec(wall)
  if (!m) throw new RangeError(`Not a wall time: ${wall}`)
  const [, y, mo, d, h, mi, s] = m
  return new Date(+y!, +mo! - 1, +d!, +h!, +mi!, s ? +s : 0)
}

/** The inverse: read a widget's browser-local Date as a wall time string. */
export function localDateToWall(date: Date): string {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`
}

export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'
}

/** `YYYY-MM` of the month containing `date` in `timeZone`. */
export function monthOf(date: Date, timeZone: string): string {
  const w = wallTimeIn(date, timeZone)
  return `${w.year}-${pad(w.month)}`
}

/**
 * `YYYY-MM` of the quota month in effect at `date`. Quotas are kept per UTC month (the server's
 * `month_start`): bookings now spend this month's, and an earlier one is over (`month_in_past`),
 * whatever month the user's own clock shows.
 */
export function quotaMonthOf(date: Date = new Date()): string {
  // The ISO string is UTC already: no time-zone formatter, so the dashboard's first read (its
  // quotas, asked as soon as the session arrives) does not wait for the browser's ICU data.
  return date.toISOString().slice(0, 7)
}

/** The API names a month by its first day (`YYYY-MM-01`). */
export function monthParam(yearMonth: string): string {
  return `${yearMonth.slice(0, 7)}-01`
}

export function hoursBetween(start: Date, end: Date): number {
  return (end.getTime() - start.getTime()) / 3600_000
}

/** Round `date` up to the next multiple of `minutes` after midnight UTC (pool granularity). */
export function ceilToMinutes(date: Date, minutes: number): Date {
  const step = minutes * 60_000
  return new Date(Math.ceil(date.getTime() / step) * step)
}

/**
 * The first day of the week in `locale`, as the calendar widget counts (0 = Sunday, 1 = Monday).
 * From CLDR through Intl.Locale's week info where the browser has it; zh-CN weeks start on Monday
 * (GB/T 7408) even where it does not.
 */
export type DayOfWeek = 0 | 1 | 2 | 3 | 4 | 5 | 6

export function firstDayOfWeek(locale: string): DayOfWeek {
  if (locale.toLowerCase().startsWith('zh')) return 1
  try {
    const loc = new Intl.Locale(locale) as Intl.Locale & {
      getWeekInfo?: () => { firstDay: number }
      weekInfo?: { firstDay: number }
    }
    const info = loc.getWeekInfo?.() ?? loc.weekInfo
    if (info) return (info.firstDay % 7) as DayOfWeek
  } catch {
    /* an odd tag: the widget's default below */
  }
  return 0
}

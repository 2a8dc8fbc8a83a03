// The time zones a person may choose from, described for people: offset, the zone's name in the
// app's language, and a search that finds a zone by any of those (or its IANA name).
import { browserTimeZone, zoneOffsetMs } from './time'

export interface ZoneChoice {
  /** The IANA name: what is stored. */
  id: string
  /** `UTC+08:00` at the moment the list was built. */
  offset: string
  offsetMs: number
  /** The zone's generic name in the app's language (`中国标准时间`, `Central European Time`). */
  name: string
  /** The city part of the IANA name, readable (`Los Angeles`), or the localised city where we ship one. */
  city: string
  /** Lower-cased text that a search matches against. */
  haystack: string
}

/** Zones most people here pick, after the browser's own; the rest follow alphabetically. */
export const COMMON_ZONES = [
  'Asia/Shanghai',
  'UTC',
  'Asia/Hong_Kong',
  'Asia/Taipei',
  'Asia/Singapore',
  'Asia/Tokyo',
  'Europe/London',
  'Europe/Berlin',
  'Europe/Paris',
  'America/New_York',
  'America/Chicago',
  'America/Los_Angeles',
  'America/Toronto',
  'Australia/Sydney',
] as const

export function allTimeZones(): string[] {
  let zones: string[]
  try {
    zones = Intl.supportedValuesOf('timeZone')
  } catch {
    zones = [...COMMON_ZONES]
  }
  const set = new Set(zones)
  set.add('UTC')
  return [...set]
}

/** `UTC+08:00`, `UTC−03:30`, `UTC` for a zero offset. */
export function formatOffset(ms: number): string {
  if (ms === 0) return 'UTC'
  const minutes = Math.round(Math.abs(ms) / 60_000)
  const hh = String(Math.floor(minutes / 60)).padStart(2, '0')
  const mm = String(minutes % 60).padStart(2, '0')
  return `UTC${ms < 0 ? '-' : '+'}${hh}:${mm}`
}

function zoneName(id: string, locale: string, at: Date): string {
  try {
    const parts = new Intl.DateTimeFormat(locale, { timeZone: id, timeZoneName: 'longGeneric' }).formatToParts(at)
    return parts.find((p) => p.type === 'timeZoneName')?.value ?? id
  } catch {
    return id
  }
}

/**
 * One zone, described in `locale`; `cities` holds localised city names for some zones and `aliases`
 * more text a search should find it by (its city in other languages).
 */
export function describeZone(
  id: string,
  locale: string,
  cities: Record<string, string> = {},
  at = new Date(),
  aliases = '',
): ZoneChoice {
  const offsetMs = zoneOffsetMs(at, id)
  const offset = formatOffset(offsetMs)
  const name = id === 'UTC' ? offset : zoneName(id, locale, at)
  const englishCity = (id.split('/').pop() ?? id).replace(/_/g, ' ')
  const city = cities[id] ?? englishCity
  // +08, +8, GMT+8 and UTC+08:00 all find Asia/Shanghai.
  const sign = offsetMs < 0 ? '-' : '+'
  const hours = Math.floor(Math.abs(offsetMs) / 3600_000)
  const shortOffsets = offsetMs === 0 ? 'gmt utc +0 +00' : `${sign}${hours} gmt${sign}${hours} utc${sign}${hours}`
  const english = id === 'UTC' ? 'Coordinated Universal Time' : zoneName(id, 'en', at)
  const haystack = [id, id.replace(/_/g, ' '), name, english, city, englishCity, offset, shortOffsets, aliases].join(' ').toLowerCase()
  return { id, offset, offsetMs, name, city, haystack }
}

/** The browser's zone first, then the common ones, then every other zone by name. */
export function orderedZones(zones: string[], browserZone = browserTimeZone()): { common: string[]; rest: string[] } {
  const available = new Set(zones)
  const common = [browserZone, ...COMMON_ZONES].filter((z, i, all) => available.has(z) && all.indexOf(z) === i)
  const pinned = new Set(common)
  const rest = zones.filter((z) => !pinned.has(z)).sort()
  return { common, rest }
}

/** Whether `choice` matches what was typed: every word of the query somewhere in its text. */
export function matchesZone(choice: ZoneChoice, query: string): boolean {
  const words = query.toLowerCase().trim().split(/\s+/).filter(Boolean)
  return words.every((w) => choice.haystack.includes(w))
}

import { describe, expect, it } from 'vitest'

import {
  ceilToMinutes,
  fromWallString,
  localDateToWall,
  monthOf,
  monthParam,
  offsetString,
  quotaMonthOf,
  toCalendarString,
  toWallString,
  wallToLocalDate,
  zoneOffsetMs,
} from '../time'

describe('time zones (I-7: the SPA shows the user’s zone)', () => {
  it('shows a UTC instant as the wall clock of the user’s zone', () => {
    expect(toWallString('2026-11-30T01:00:00Z', 'Asia/Shanghai')).toBe('2026-11-30T09:00')
    expect(toWallString('2026-11-30T01:00:00Z', 'America/Toronto')).toBe('2026-11-29T20:00')
    expect(toCalendarString('2026-11-30T01:00:30Z', 'UTC')).toBe('2026-11-30 01:00:30')
  })

  it('reads a wall time typed in the user’s zone back as the right instant', () => {
    expect(fromWallString('2026-11-30T09:00', 'Asia/Shanghai').toISOString()).toBe('2026-11-30T01:00:00.000Z')
    expect(fromWallString('2026-07-01T12:00', 'Europe/Berlin').toISOString()).toBe('2026-07-01T10:00:00.000Z')
  })

  it('round-trips every hour across a DST change', () => {
    const start = Date.parse('2026-03-07T00:00:00Z')
    for (let h = 0; h < 72; h++) {
      const instant = new Date(start + h * 3600_000)
      const wall = toWallString(instant, 'America/New_York')
      const back = fromWallString(wall, 'America/New_York')
      // In the fall-back overlap two instants share a wall time; here (spring) each is unique.
      expect(back.getTime()).toBe(instant.getTime())
    }
  })

  it('moves a time inside the spring-forward gap forward by the gap', () => {
    // 2026-03-08 02:30 does not exist in New York: clocks jump from 02:00 EST to 03:00 EDT.
    expect(fromWallString('2026-03-08T02:30', 'America/New_York').toISOString()).toBe('2026-03-08T07:30:00.000Z')
  })

  it('takes the earlier instant for a time that the fall-back overlap repeats', () => {
    // 2026-11-01 01:30 happens twice in New York: first at EDT (05:30Z), then at EST (06:30Z).
    expect(fromWallString('2026-11-01T01:30', 'America/New_York').toISOString()).toBe('2026-11-01T05:30:00.000Z')
  })

  it('knows zone offsets on both sides of a DST change', () => {
    expect(zoneOffsetMs(new Date('2026-01-15T12:00:00Z'), 'America/New_York')).toBe(-5 * 3600_000)
    expect(zoneOffsetMs(new Date('2026-07-15T12:00:00Z'), 'America/New_York')).toBe(-4 * 3600_000)
    expect(zoneOffsetMs(new Date('2026-07-15T12:00:00Z'), 'Asia/Kolkata')).toBe(5.5 * 3600_000)
  })

  it('names the month in the user’s zone, as the API wants it', () => {
    // 23:30 UTC on the last day of November is already December in Shanghai.
    expect(monthOf(new Date('2026-11-30T23:30:00Z'), 'Asia/Shanghai')).toBe('2026-12')
    expect(monthOf(new Date('2026-11-30T23:30:00Z'), 'UTC')).toBe('2026-11')
    expect(monthParam('2026-12')).toBe('2026-12-01')
  })

  it('counts quota months in UTC, whatever the clock of the user says', () => {
    expect(quotaMonthOf(new Date('2026-11-30T23:30:00Z'))).toBe('2026-11')
    expect(quotaMonthOf(new Date('2026-12-01T00:00:00Z'))).toBe('2026-12')
    // 1 December 07:30 in Shanghai is still November's quota; 31 December 20:00 in Toronto is January's.
    expect(quotaMonthOf(new Date('2026-12-01T07:30:00+08:00'))).toBe('2026-11')
    expect(quotaMonthOf(new Date('2026-12-31T20:00:00-05:00'))).toBe('2027-01')
  })

  it('hands the calendar widget browser-local dates that spell the wall time', () => {
    const d = wallToLocalDate('2026-11-30 09:15:00')
    expect(localDateToWall(d)).toBe('2026-11-30T09:15')
  })

  it('rounds up to the pool grid', () => {
    expect(ceilToMinutes(new Date('2026-11-30T09:01:00Z'), 30).toISOString()).toBe('2026-11-30T09:30:00.000Z')
    expect(ceilToMinutes(new Date('2026-11-30T09:30:00Z'), 30).toISOString()).toBe('2026-11-30T09:30:00.000Z')
  })
})

describe('offsetString (the calendar widget’s clock)', () => {
  it('gives the zone’s offset at that instant, DST included, as ±HH:MM', () => {
    expect(offsetString(new Date('2026-12-01T03:00:00Z'), 'Asia/Shanghai')).toBe('+08:00')
    expect(offsetString(new Date('2026-07-01T12:00:00Z'), 'America/Los_Angeles')).toBe('-07:00')
    expect(offsetString(new Date('2026-12-01T12:00:00Z'), 'America/Los_Angeles')).toBe('-08:00')
    expect(offsetString(new Date('2026-12-01T12:00:00Z'), 'Asia/Kolkata')).toBe('+05:30')
    expect(offsetString(new Date('2026-12-01T12:00:00Z'), 'UTC')).toBe('+00:00')
  })
})

import { describe, expect, it } from 'vitest'

import { describeZone, formatOffset, matchesZone, orderedZones } from '../timezones'

describe('time-zone choices', () => {
  const at = new Date('2026-01-15T12:00:00Z')

  it('formats offsets east and west of UTC, with minutes', () => {
    expect(formatOffset(8 * 3600_000)).toBe('UTC+08:00')
    expect(formatOffset(-(3 * 3600_000 + 30 * 60_000))).toBe('UTC-03:30')
    expect(formatOffset(0)).toBe('UTC')
  })

  it('finds Asia/Shanghai by its city in Chinese, its English name and its offset', () => {
    const shanghai = describeZone('Asia/Shanghai', 'zh-CN', { 'Asia/Shanghai': '上海' }, at)
    for (const q of ['上海', 'Shanghai', '+08', 'utc+8', 'china']) expect(matchesZone(shanghai, q), q).toBe(true)
    const berlin = describeZone('Europe/Berlin', 'zh-CN', {}, at)
    expect(matchesZone(berlin, '+08')).toBe(false)
    expect(berlin.offset).toBe('UTC+01:00')
  })

  it('puts the browser zone first, then the common zones, then the rest by name', () => {
    const { common, rest } = orderedZones(['Europe/Berlin', 'Asia/Shanghai', 'UTC', 'Africa/Abidjan', 'Atlantic/Reykjavik'], 'Atlantic/Reykjavik')
    expect(common).toEqual(['Atlantic/Reykjavik', 'Asia/Shanghai', 'UTC', 'Europe/Berlin'])
    expect(rest).toEqual(['Africa/Abidjan'])
  })
})

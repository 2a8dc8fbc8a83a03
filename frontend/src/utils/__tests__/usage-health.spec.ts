import { describe, expect, it } from 'vitest'

import type { UsageRow } from '@/api/types'
import { parseFindings, parseSmoke } from '../health'
import { daysBetween, niceTicks, sparseLabels, stackByDay, totalsBy, utilisationCells } from '../usage'

const row = (day: string, lab: string, gpu_hours: string, cost: string, pool = 1, used = 0, util: number | null = null): UsageRow => ({
  day,
  lab: lab === 'Vision' ? 1 : 2,
  lab_name: lab,
  pool,
  pool_name: `pool ${pool}`,
  gpu_hours,
  cost,
  seconds: 0,
  booked_hours: Number(gpu_hours),
  used_hours: used,
  average_utilisation_pct: util,
})

describe('usage charts', () => {
  const days = daysBetween('2026-11-01', '2026-11-03')

  it('puts round ticks from zero to at least the largest value', () => {
    expect(niceTicks(18.5)).toEqual([0, 5, 10, 15, 20])
    expect(niceTicks(5350)).toEqual([0, 2000, 4000, 6000])
    expect(niceTicks(0)).toEqual([0, 1])
  })

  it('labels every k-th day so the labels fit', () => {
    expect(sparseLabels(['a', 'b', 'c', 'd', 'e'], 2)).toEqual(['a', '', '', 'd', ''])
  })

  it('lists every day of the range', () => {
    expect(days).toEqual(['2026-11-01', '2026-11-02', '2026-11-03'])
  })

  it('stacks GPU-hours per day by lab, with zeros on quiet days', () => {
    const rows = [row('2026-11-01', 'Vision', '4.00', '7.96'), row('2026-11-03', 'Vision', '2.50', '4.98'), row('2026-11-02', 'Language', '8.00', '27.12')]
    expect(stackByDay(rows, 'lab', 'gpu_hours', days)).toEqual([
      { name: 'Language', data: [0, 8, 0] },
      { name: 'Vision', data: [4, 0, 2.5] },
    ])
    expect(stackByDay(rows, 'lab', 'cost', days)[1]!.data).toEqual([7.96, 0, 4.98])
  })

  it('totals per group, biggest first', () => {
    const totals = totalsBy([row('2026-11-01', 'Vision', '4', '8'), row('2026-11-02', 'Language', '9', '30'), row('2026-11-03', 'Vision', '1', '2')], 'lab')
    expect(totals).toEqual([
      { name: 'Language', gpuHours: 9, cost: 30, bookedHours: 9, usedHours: 0, averageUtilisation: null },
      { name: 'Vision', gpuHours: 5, cost: 10, bookedHours: 5, usedHours: 0, averageUtilisation: null },
    ])
  })

  it('totals booked vs used hours, averaging utilisation over the booked hours that have one', () => {
    const totals = totalsBy(
      [row('2026-11-01', 'Vision', '4', '8', 1, 1, 20), row('2026-11-02', 'Vision', '1', '2', 1, 1, 70), row('2026-11-03', 'Vision', '3', '6')],
      'lab',
    )
    expect(totals).toEqual([{ name: 'Vision', gpuHours: 8, cost: 16, bookedHours: 8, usedHours: 2, averageUtilisation: 30 }])
  })

  it('computes utilisation against capacity × GPUs × 24 h', () => {
    const cells = utilisationCells([row('2026-11-02', 'Vision', '24', '0', 7)], [{ id: 7, name: 'p', gpuHoursPerDay: 96 }], days)
    expect(cells).toEqual([
      [0, 0, 0],
      [1, 0, 25],
      [2, 0, 0],
    ])
  })
})

describe('health report parsing', () => {
  it('orders findings worst first and tolerates junk', () => {
    const findings = parseFindings([
      { id: 'a', severity: 'info', message: 'fine' },
      'garbage',
      { id: 'b', severity: 'fail', message: 'driver not loaded', remediation: 'modprobe amdgpu' },
      { id: 'c', severity: 'weird', message: 'unknown severity' },
      { id: 'd', severity: 'warn', message: 'PCIe x8' },
    ])
    expect(findings.map((f) => `${f.id}:${f.severity}`)).toEqual(['b:fail', 'd:warn', 'a:info', 'c:info'])
    expect(findings[0]!.remediation).toBe('modprobe amdgpu')
    expect(parseFindings(null)).toEqual([])
  })

  it('reads smoke results with missing values as null', () => {
    expect(parseSmoke([{ name: 'sdxl', status: 'skipped', metric: 'img/s', value: null, reason: 'no torch' }])).toEqual([
      { name: 'sdxl', status: 'skipped', metric: 'img/s', value: null, unit: '', baseline: null, reason: 'no torch' },
    ])
  })
})

import type { UsageRow } from '@/api/types'
import type { UsageGroup } from '@/api/usage'

export type UsageMetric = 'gpu_hours' | 'cost'

/** The calendar day after `day` (`YYYY-MM-DD`). */
export function dayAfter(day: string): string {
  const d = new Date(`${day}T00:00:00Z`)
  d.setUTCDate(d.getUTCDate() + 1)
  return d.toISOString().slice(0, 10)
}

/** Every day from `start` to `end` inclusive, as `YYYY-MM-DD`. */
export function daysBetween(start: string, end: string): string[] {
  const out: string[] = []
  const d = new Date(`${start}T00:00:00Z`)
  const last = new Date(`${end}T00:00:00Z`)
  while (d <= last && out.length < 400) {
    out.push(d.toISOString().slice(0, 10))
    d.setUTCDate(d.getUTCDate() + 1)
  }
  return out
}

export function groupLabel(row: UsageRow, group: UsageGroup): string {
  switch (group) {
    case 'lab':
      return row.lab_name ?? `#${row.lab}`
    case 'user':
      return row.user_name ?? `#${row.user}`
    case 'pool':
      return row.pool_name ?? `#${row.pool}`
    case 'instance_type':
      return row.instance_type_name ?? `#${row.instance_type}`
    case 'booking':
      return row.booking_name ?? `#${row.booking}`
    case 'cost_centre':
      return row.cost_centre_name || '—' // usage booked to no cost centre
    default:
      return row.day ?? ''
  }
}

/** Rows grouped by (group, day) as one series per group over `days`, for a stacked bar chart. */
export function stackByDay(rows: UsageRow[], group: UsageGroup, metric: UsageMetric, days: string[]) {
  const index = new Map(days.map((d, i) => [d, i]))
  const series = new Map<string, number[]>()
  for (const row of rows) {
    const i = row.day ? index.get(row.day.slice(0, 10)) : undefined
    if (i === undefined) continue
    const name = groupLabel(row, group)
    const values = series.get(name) ?? days.map(() => 0)
    values[i]! += Number(row[metric])
    series.set(name, values)
  }
  return [...series.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, data]) => ({ name, data: data.map((v) => Math.round(v * 100) / 100) }))
}

export interface UsageTotals {
  gpuHours: number
  cost: number
  bookedHours: number
  usedHours: number
  /** Mean GPU utilisation, weighted by the booked hours of the rows that have one; null: none. */
  averageUtilisation: number | null
}

/** Sum rows per group (and over all of them): GPU-hours, cost, booked vs used hours. */
export function sumRows(rows: UsageRow[]): UsageTotals {
  let gpuHours = 0, cost = 0, bookedHours = 0, usedHours = 0, weighted = 0, weight = 0
  for (const row of rows) {
    gpuHours += Number(row.gpu_hours)
    cost += Number(row.cost)
    bookedHours += row.booked_hours
    usedHours += row.used_hours
    if (row.average_utilisation_pct != null) {
      weighted += row.average_utilisation_pct * row.booked_hours
      weight += row.booked_hours
    }
  }
  const round = (v: number) => Math.round(v * 100) / 100
  return {
    gpuHours, cost, bookedHours: round(bookedHours), usedHours: round(usedHours),
    averageUtilisation: weight > 0 ? Math.round((weighted / weight) * 10) / 10 : null,
  }
}

export function totalsBy(rows: UsageRow[], group: UsageGroup) {
  const byName = new Map<string, UsageRow[]>()
  for (const row of rows) {
    const name = groupLabel(row, group)
    byName.set(name, [...(byName.get(name) ?? []), row])
  }
  return [...byName.entries()].map(([name, r]) => ({ name, ...sumRows(r) })).sort((a, b) => b.gpuHours - a.gpuHours)
}

/**
 * Share of a pool's GPU-hours used per day: used / (capacity × GPUs per node × 24 h), as a
 * [dayIndex, poolIndex, percent] triple per cell for a heatmap.
 */
export function utilisationCells(
  rows: UsageRow[],
  pools: { id: number; name: string; gpuHoursPerDay: number }[],
  days: string[],
): [number, number, number][] {
  const dayIndex = new Map(days.map((d, i) => [d, i]))
  const poolIndex = new Map(pools.map((p, i) => [p.id, i]))
  const used = new Map<string, number>()
  for (const row of rows) {
    const d = row.day ? dayIndex.get(row.day.slice(0, 10)) : undefined
    const p = row.pool != null ? poolIndex.get(row.pool) : undefined
    if (d === undefined || p === undefined) continue
    const key = `${d}:${p}`
    used.set(key, (used.get(key) ?? 0) + Number(row.gpu_hours))
  }
  const cells: [number, number, number][] = []
  pools.forEach((pool, p) => {
    days.forEach((_, d) => {
      const hours = used.get(`${d}:${p}`) ?? 0
      const pct = pool.gpuHoursPerDay > 0 ? Math.min(100, Math.round((hours / pool.gpuHoursPerDay) * 1000) / 10) : 0
      cells.push([d, p, pct])
    })
  })
  return cells
}

/** Axis ticks from 0 to a round value at or above `max` (steps of 1, 2 or 5 × 10ⁿ), about four. */
export function niceTicks(max: number, count = 4): number[] {
  if (!(max > 0)) return [0, 1]
  const raw = max / count
  const magnitude = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!
  const ticks: number[] = []
  for (let v = 0; v < max + step; v += step) ticks.push(Math.round(v * 1e6) / 1e6)
  return ticks
}

/** Every `k`-th label shown, the rest blank, so at most about `room` labels fit under an axis. */
export function sparseLabels(labels: string[], room = 8): string[] {
  const k = Math.max(1, Math.ceil(labels.length / room))
  return labels.map((l, i) => (i % k === 0 ? l : ''))
}

/** Colours of chart series, in order; each passes 3:1 against white (WCAG non-text contrast). */
export const SERIES_COLOURS = ['#0b5cad', '#c2410c', '#1a7f37', '#8250df', '#b42318', '#0e7490', '#9a6700', '#57606a']

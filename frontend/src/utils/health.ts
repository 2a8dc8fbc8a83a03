// The agent's report carries findings and smoke results as free-form JSON in the schema; read them
// defensively so an older or newer agent never breaks the page.

export type Severity = 'info' | 'warn' | 'fail'

export interface HealthFinding {
  id: string
  severity: Severity
  message: string
  remediation: string
}

export interface SmokeResult {
  name: string
  status: string
  metric: string
  value: number | null
  unit: string
  baseline: number | null
  reason: string | null
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null
const str = (v: unknown) => (typeof v === 'string' ? v : '')
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null)
const SEVERITY_ORDER: Record<Severity, number> = { fail: 0, warn: 1, info: 2 }

/** Findings, worst first. */
export function parseFindings(raw: unknown): HealthFinding[] {
  if (!Array.isArray(raw)) return []
  return raw
    .filter(isRecord)
    .map((f) => ({
      id: str(f.id),
      severity: (['info', 'warn', 'fail'].includes(str(f.severity)) ? str(f.severity) : 'info') as Severity,
      message: str(f.message),
      remediation: str(f.remediation),
    }))
    .sort((a, b) => SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity])
}

export function parseSmoke(raw: unknown): SmokeResult[] {
  if (!Array.isArray(raw)) return []
  return raw.filter(isRecord).map((s) => ({
    name: str(s.name),
    status: str(s.status),
    metric: str(s.metric),
    value: num(s.value),
    unit: str(s.unit),
    baseline: num(s.baseline),
    reason: typeof s.reason === 'string' ? s.reason : null,
  }))
}

/** Per smoke test, its measured values over time (oldest first), for a throughput history chart. */
export function smokeHistory(
  reports: { collected_at: string; smoke?: unknown }[],
): { name: string; unit: string; points: [string, number][] }[] {
  const byName = new Map<string, { unit: string; points: [string, number][] }>()
  const sorted = [...reports].sort((a, b) => Date.parse(a.collected_at) - Date.parse(b.collected_at))
  for (const report of sorted) {
    for (const s of parseSmoke(report.smoke)) {
      if (s.value == null || s.status === 'skipped') continue
      const name = `${s.name} (${s.metric})`
      const entry = byName.get(name) ?? { unit: s.unit, points: [] }
      entry.points.push([report.collected_at, s.value])
      byName.set(name, entry)
    }
  }
  return [...byName.entries()].map(([name, e]) => ({ name, ...e }))
}

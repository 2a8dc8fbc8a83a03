import type { Booking, BookingStatus, InstanceType, Quota } from '@/api/types'
import { LIVE_STATUSES, TERMINAL_STATUSES } from '@/api/types'

/** What a booking of `hours` on one node of `type` costs and uses, before the API confirms it. */
export function estimateBooking(
  hours: number,
  type: Pick<InstanceType, 'gpu_count' | 'price_per_hour'> | undefined,
): { gpuHours: number; cost: number } | null {
  if (!type || !Number.isFinite(hours) || hours <= 0) return null
  return {
    gpuHours: round2(hours * type.gpu_count),
    cost: round2(hours * Number(type.price_per_hour)),
  }
}

/**
 * The GPU-hours a booking of [start, end) takes from each quota month it touches (`YYYY-MM`).
 * Quota months are UTC calendar months, as the server counts them (`months_touched`), whatever the
 * user's clock reads; the server judges each month on its own share.
 */
export function quotaMonthShares(start: Date, end: Date, gpuCount: number): { month: string; gpuHours: number }[] {
  const shares: { month: string; gpuHours: number }[] = []
  let year = start.getUTCFullYear()
  let month = start.getUTCMonth()
  // A year of months at most: the pools' longest bookings are days (and a typo is not a loop).
  while (shares.length < 13) {
    const begin = Date.UTC(year, month, 1)
    if (begin >= end.getTime()) break
    const following = Date.UTC(year, month + 1, 1)
    const hours = (Math.min(end.getTime(), following) - Math.max(start.getTime(), begin)) / 3600_000
    shares.push({ month: new Date(begin).toISOString().slice(0, 7), gpuHours: round2(hours * gpuCount) })
    year = new Date(following).getUTCFullYear()
    month = new Date(following).getUTCMonth()
  }
  return shares
}

/**
 * "Start now": an on-demand booking from `now` (the server takes its own now when no start is
 * sent, and exempts that start from the grid), `length` long, its end rounded up to the pool's
 * grid (the server's `ceil_to_grid`, from UTC midnight) and never shorter than the pool's minimum.
 */
export function onDemandWindow(
  pool: { granularity_minutes?: number; min_duration_minutes?: number },
  length: number,
  now: Date = new Date(),
): { start: Date; end: Date } {
  const start = new Date(Math.floor(now.getTime() / 60_000) * 60_000)
  const step = Math.max(pool.granularity_minutes ?? 30, 1) * 60_000
  const least = Math.max(length, (pool.min_duration_minutes ?? 0) * 60_000)
  return { start, end: new Date(Math.ceil((now.getTime() + least) / step) * step) }
}

export function round2(n: number): number {
  return Math.round(n * 100) / 100
}

/** Share of a quota spent or promised, 0..1 each, for a quota bar. */
export function quotaShares(q: Pick<Quota, 'gpu_hours' | 'used_gpu_hours' | 'committed_gpu_hours'>) {
  const total = Number(q.gpu_hours)
  if (!(total > 0)) return { used: 0, committed: 0 }
  const used = Math.min(1, Number(q.used_gpu_hours) / total)
  const committed = Math.min(1 - used, Number(q.committed_gpu_hours) / total)
  return { used, committed }
}

export function isTerminal(status: BookingStatus): boolean {
  return TERMINAL_STATUSES.includes(status)
}

export function isLive(status: BookingStatus): boolean {
  return LIVE_STATUSES.includes(status)
}

/** Who is looking: enough to know whether the server lets them change a booking. */
export interface Viewer {
  id: number
  isSiteAdmin: boolean
  adminLabIds: readonly number[]
}

/** The server's rule (bookings selectors `booking_changeable_by`): the owner, the lab's admins, site admins. */
export function canChange(b: { user: { id: number }; lab: { id: number } }, viewer: Viewer): boolean {
  return viewer.isSiteAdmin || b.user.id === viewer.id || viewer.adminLabIds.includes(b.lab.id)
}

export function canCancel(b: Pick<Booking, 'status'>): boolean {
  return ['pending', 'scheduled'].includes(b.status)
}

export function canEndEarly(b: Pick<Booking, 'status'>): boolean {
  return ['provisioning', 'ready'].includes(b.status)
}

export function canExtend(b: Pick<Booking, 'status'>): boolean {
  return ['scheduled', 'provisioning', 'ready'].includes(b.status)
}

/** The happy path a booking walks; side exits replace the tail. */
export const STATUS_PATH: readonly BookingStatus[] = [
  'pending',
  'scheduled',
  'provisioning',
  'ready',
  'ending',
  'completed',
]

export interface TimelineStep {
  status: BookingStatus
  state: 'done' | 'current' | 'todo' | 'failed'
}

export function statusTimeline(status: BookingStatus, requiresApproval: boolean): TimelineStep[] {
  const path = requiresApproval ? STATUS_PATH : STATUS_PATH.filter((s) => s !== 'pending')
  const idx = path.indexOf(status)
  if (idx >= 0) {
    return path.map((s, i) => ({
      status: s,
      state: i < idx ? 'done' : i === idx ? (status === 'completed' ? 'done' : 'current') : 'todo',
    }))
  }
  // A side exit: show the path up to where it probably left, then the exit.
  const leftAt: Record<string, BookingStatus> = {
    rejected: 'pending',
    expired: 'pending',
    cancelled: 'scheduled',
    failed: 'provisioning',
  }
  const cut = path.indexOf(leftAt[status] ?? path[0]!)
  const before = path.slice(0, Math.max(cut, 0)).map((s) => ({ status: s, state: 'done' as const }))
  return [...before, { status, state: 'failed' }]
}

/** Node states before the node is usable: its SSH command is still to come. */
const NODE_COMING = ['requested', 'creating', 'booting', 'checking', 'ready']

/**
 * What the node card says about SSH access: the command (`ssh`), that it is still to come, or why
 * there is none any more (the booking ended, the node failed or was destroyed).
 */
export function sshState(
  b: Pick<Booking, 'status'> & { node: Pick<NonNullable<Booking['node']>, 'status' | 'ssh_command'> | null },
): 'ssh' | 'later' | 'ended' | 'gone' | 'failed' {
  const node = b.node
  if (!node) return 'later'
  if (node.status === 'destroyed') return 'gone'
  if (node.status === 'failed') return 'failed'
  if (!['provisioning', 'ready'].includes(b.status) || !NODE_COMING.includes(node.status)) return 'ended'
  return node.ssh_command ? 'ssh' : 'later'
}

/** Whether someone ended the booking before its planned end (the API's actual_end is earlier). */
export function endedEarly(b: Pick<Booking, 'end' | 'actual_end'>): boolean {
  return Date.parse(b.actual_end) < Date.parse(b.end)
}

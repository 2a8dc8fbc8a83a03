import { listBookings } from '@/api/bookings'
import type { Booking } from '@/api/types'
import { useResource } from './useResource'

const OPEN = ['pending', 'scheduled', 'provisioning', 'ready', 'ending'] as const

function fetchOpen(): Promise<Booking[]> {
  return listBookings({ mine: true, status: [...OPEN], ordering: 'start', page_size: 100 }).then((page) => page.results)
}

// A read started before the page's code arrived (the first page load), taken by the first mount.
// Only a recent one is taken: an older answer would show bookings as they were, not as they are.
let early: { at: number; read: Promise<Booking[]> } | null = null
const EARLY_MAX_AGE_MS = 10_000

/**
 * Start reading my open bookings now, beside `/api/v1/me/` and the dashboard's code, instead of
 * after both (the read needs neither the session's labs nor its time zone).
 */
export function prefetchMyUpcomingBookings(): void {
  const read = fetchOpen()
  read.catch(() => {
    if (early?.read === read) early = null
  })
  early = { at: Date.now(), read }
}

function takeEarly(): Promise<Booking[]> | null {
  const taken = early && Date.now() - early.at < EARLY_MAX_AGE_MS ? early.read : null
  early = null
  return taken
}

/** My bookings that have not ended (pending, scheduled or live), soonest first. */
export function useMyUpcomingBookings() {
  return useResource(async () => {
    const all = await (takeEarly() ?? fetchOpen())
    const now = Date.now()
    return all.filter((b) => new Date(b.end).getTime() > now && (OPEN as readonly string[]).includes(b.status))
  })
}

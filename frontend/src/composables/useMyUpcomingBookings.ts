import { listBookings } from '@/api/bookings'
import type { Booking } from '@/api/types'
import { earlyRead } from '@/utils/earlyRead'
import { useResource } from './useResource'

const OPEN = ['pending', 'scheduled', 'provisioning', 'ready', 'ending'] as const

function fetchOpen(): Promise<Booking[]> {
  return listBookings({ mine: true, status: [...OPEN], ordering: 'start', page_size: 100 }).then((page) => page.results)
}

const early = earlyRead<Booking[]>()

/**
 * Start reading my open bookings now, beside `/api/v1/me/` and the dashboard's code, instead of
 * after both (the read needs neither the session's labs nor its time zone).
 */
export function prefetchMyUpcomingBookings(): Promise<unknown> {
  const read = fetchOpen()
  early.start('', read)
  return read
}

/** My bookings that have not ended (pending, scheduled or live), soonest first. */
export function useMyUpcomingBookings() {
  return useResource(async () => {
    const all = await (early.take('') ?? fetchOpen())
    const now = Date.now()
    return all.filter((b) => new Date(b.end).getTime() > now && (OPEN as readonly string[]).includes(b.status))
  })
}

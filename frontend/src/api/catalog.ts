import { api, fetchAllPages, MAX_PAGE_SIZE, unwrap } from './client'
import type { Availability, Blackout, BlackoutClash, BlackoutCreated, BusyBlock, FreeWindow, InstanceType, Lab, Pool, PoolReadyTime } from './types'

const page_size = MAX_PAGE_SIZE

export function listLabs(): Promise<Lab[]> {
  return fetchAllPages((page) => unwrap(api.GET('/api/v1/labs/', { params: { query: { page, page_size } } })))
}

export function listInstanceTypes(): Promise<InstanceType[]> {
  return fetchAllPages((page) =>
    unwrap(api.GET('/api/v1/instance-types/', { params: { query: { page, page_size } } })),
  )
}

export function listPools(): Promise<Pool[]> {
  return fetchAllPages((page) =>
    unwrap(api.GET('/api/v1/pools/', { params: { query: { page, page_size, is_active: true } } })),
  )
}

/** How long each pool's latest nodes took from creation to handover (pools with none are left out). */
export function listPoolReadyTimes(): Promise<PoolReadyTime[]> {
  return unwrap(api.GET('/api/v1/pool-ready-times/'))
}

export function listBlackouts(pool: number | undefined, range?: { start: string; end: string }): Promise<Blackout[]> {
  const window = range ? { end_after: range.start, start_before: range.end } : {}
  return fetchAllPages((page) =>
    unwrap(api.GET('/api/v1/blackouts/', { params: { query: { pool, page, page_size, ...window } } })),
  )
}

/** Close a pool for maintenance (site admins); the answer lists the live bookings it overlaps. */
export function createBlackout(body: { pool: number; start: string; end: string; reason: string }): Promise<BlackoutCreated> {
  return unwrap(api.POST('/api/v1/blackouts/', { body }))
}

export function blackoutClashes(id: number): Promise<BlackoutClash[]> {
  return unwrap(api.GET('/api/v1/blackouts/{id}/clashes/', { params: { path: { id } } }))
}

export function poolAvailability(
  pool: number,
  range: { start: string; end: string; duration_minutes?: number },
): Promise<Availability> {
  return unwrap(
    api.GET('/api/v1/pools/{id}/availability/', { params: { path: { id: pool }, query: range } }),
  )
}

export function poolBusy(pool: number, range: { start: string; end: string }): Promise<BusyBlock[]> {
  return fetchAllPages(async (page) => {
    const data: unknown = await unwrap(
      api.GET('/api/v1/pools/{id}/busy/', {
        params: { path: { id: pool }, query: { ...range, page, page_size } },
      }),
    )
    // The schema declares a page, but the view answers with a plain list: accept both.
    return Array.isArray(data)
      ? { results: data as BusyBlock[], next: null }
      : (data as { results: BusyBlock[]; next?: string | null })
  })
}

/** The pool's next free windows, each marked with the refusal my own limits in `lab` would give. */
export function poolFreeWindows(
  pool: number,
  query: { after?: string; duration_minutes?: number; lab?: number },
): Promise<FreeWindow[]> {
  return unwrap(api.GET('/api/v1/pools/{id}/free-windows/', { params: { path: { id: pool }, query } }))
}

import { api, unwrap } from './client'
import type { Page, WaitlistEntry, WaitlistJoin } from './types'

/** Your waitlist entries (lab admins: their labs'), newest first; `active`: waiting or offered. */
export function listWaitlist(query: { status?: 'active'; page?: number } = {}): Promise<Page<WaitlistEntry>> {
  return unwrap(api.GET('/api/v1/waitlist/', { params: { query } }))
}

/** Wait for a full window (a pool, or any pool of a GPU model). */
export function joinWaitlist(input: WaitlistJoin): Promise<WaitlistEntry> {
  return unwrap(api.POST('/api/v1/waitlist/', { body: input }))
}

/** Take the held offer: its booking is scheduled (pending where the pool needs approval). */
export function acceptOffer(id: number): Promise<WaitlistEntry> {
  return unwrap(api.POST('/api/v1/waitlist/{id}/accept/', { params: { path: { id } } }))
}

/** Turn the offer down: it passes to the next in line. */
export function declineOffer(id: number): Promise<WaitlistEntry> {
  return unwrap(api.POST('/api/v1/waitlist/{id}/decline/', { params: { path: { id } } }))
}

export function leaveWaitlist(id: number): Promise<WaitlistEntry> {
  return unwrap(api.POST('/api/v1/waitlist/{id}/leave/', { params: { path: { id } } }))
}

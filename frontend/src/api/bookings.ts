import { api, unwrap } from './client'
import type { ApprovalQueueItem, AuditEvent, Booking, BookingCreate, BookingRow, BookingStatus, CompactBookings, DecisionOutcome, NotebookAccess, Occurrence, Page, Series, SeriesCreate, SeriesDecision } from './types'

export interface BookingFilters {
  page?: number
  page_size?: number
  status?: BookingStatus[]
  pool?: number
  lab?: number
  user?: number
  mine?: boolean
  ordering?: string
  start_after?: string
  end_before?: string
}

export function listBookings(filters: BookingFilters = {}): Promise<Page<Booking>> {
  return unwrap(api.GET('/api/v1/bookings/', { params: { query: filters } }))
}

export interface PoolWindowQuery {
  pool: number
  start_after: string
  end_before: string
  status?: BookingStatus[]
  mine?: boolean
}

/** The longest window GET /bookings/compact/ answers (the server says 400 beyond it). */
export const POOL_WINDOW_MAX_DAYS = 92

/** Every booking of one pool that overlaps [start_after, end_before) at once, not a page of
 *  them: the list's bookings for the same filters, compactly (each lab and user once). */
export function listPoolWindow(query: PoolWindowQuery): Promise<CompactBookings> {
  return unwrap(api.GET('/api/v1/bookings/compact/', { params: { query } }))
}

/** The compact answer's bookings as a bookings table shows them, in its order (start, then id). */
export function compactRows(answer: CompactBookings, poolName: string): BookingRow[] {
  const labs = new Map(answer.labs.map((lab) => [lab.id, lab.name]))
  return answer.bookings.map((b) => ({
    id: b.id,
    pool_name: poolName,
    start: b.start,
    end: b.end,
    purpose: b.purpose,
    status: b.status,
    lab: { name: labs.get(b.lab) ?? '' },
  }))
}

export function getBooking(id: number): Promise<Booking> {
  return unwrap(api.GET('/api/v1/bookings/{id}/', { params: { path: { id } } }))
}

/** JupyterLab's tunnel command and URL (with its token): only the booking's owner gets them. */
export function getNotebook(id: number, localPort = 8888): Promise<NotebookAccess> {
  return unwrap(
    api.GET('/api/v1/bookings/{id}/notebook/', { params: { path: { id }, query: { local_port: localPort } } }),
  )
}

export function createBooking(input: BookingCreate): Promise<Booking> {
  return unwrap(api.POST('/api/v1/bookings/', { body: input }))
}

/** Cancel before it starts, or end it early once running. */
export function cancelBooking(id: number, reason = ''): Promise<Booking> {
  return unwrap(api.POST('/api/v1/bookings/{id}/cancel/', { params: { path: { id } }, body: { reason } }))
}

export function extendBooking(id: number, end: string): Promise<Booking> {
  return unwrap(api.POST('/api/v1/bookings/{id}/extend/', { params: { path: { id } }, body: { end } }))
}

export function moveBooking(id: number, window: { start: string; end: string }): Promise<Booking> {
  return unwrap(api.POST('/api/v1/bookings/{id}/move/', { params: { path: { id } }, body: window }))
}

export function approveBooking(id: number, reason = ''): Promise<Booking> {
  return unwrap(api.POST('/api/v1/bookings/{id}/approve/', { params: { path: { id } }, body: { reason } }))
}

export function rejectBooking(id: number, reason: string): Promise<Booking> {
  return unwrap(
    api.POST('/api/v1/bookings/{id}/reject/', { params: { path: { id } }, body: { reason } }),
  )
}

/** Bookings and extension requests waiting for this admin, with what approving would change. */
export function approvalQueue(): Promise<ApprovalQueueItem[]> {
  return unwrap(api.GET('/api/v1/bookings/approval-queue/'))
}

/** Approve or reject several at once: each is decided and audited on its own; failures listed. */
export function decideBookings(ids: number[], decision: 'approve' | 'reject', reason = ''): Promise<DecisionOutcome[]> {
  return unwrap(api.POST('/api/v1/bookings/decide/', { body: { ids, decision, reason } })).then((r) => r.results)
}

/** What lab admins decided about bookings and extensions, newest first (the audit log). */
export const DECISION_ACTIONS = [
  'booking.approve',
  'booking.self_approve',
  'booking.reject',
  'booking.extension_approve',
  'booking.extension_reject',
] as const

export function decisionHistory(page = 1): Promise<Page<AuditEvent>> {
  return unwrap(
    api.GET('/api/v1/audit/', {
      params: { query: { action: [...DECISION_ACTIONS], page, page_size: 50 } },
      // The API reads `action=a,b` (one parameter, comma-separated).
      querySerializer: { array: { style: 'form', explode: false } },
    }),
  )
}

/** A recurring series: one request books every occurrence, each booked or refused with why. */
export function createSeries(input: SeriesCreate, idempotencyKey?: string): Promise<Series> {
  return unwrap(
    api.POST('/api/v1/series/', {
      body: input,
      params: { header: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {} },
    }),
  )
}

export function getSeries(id: number): Promise<Series> {
  return unwrap(api.GET('/api/v1/series/{id}/', { params: { path: { id } } }))
}

/** Cancel an occurrence and every later one (`fromBooking`), or every one not yet started. */
export function cancelSeries(id: number, fromBooking: number | null, reason = ''): Promise<Series> {
  return unwrap(
    api.POST('/api/v1/series/{id}/cancel/', {
      params: { path: { id } },
      body: { from_booking: fromBooking, reason },
    }),
  )
}

/** Move an occurrence and the later ones on the series' wall clock; refusals come back listed. */
export function moveSeries(id: number, fromBooking: number, shiftMinutes: number, durationMinutes?: number): Promise<Occurrence[]> {
  return unwrap(
    api.POST('/api/v1/series/{id}/move/', {
      params: { path: { id } },
      body: { from_booking: fromBooking, shift_minutes: shiftMinutes, ...(durationMinutes ? { duration_minutes: durationMinutes } : {}) },
    }),
  ).then((r) => r.occurrences)
}

export function decideSeries(id: number, decision: 'approve' | 'reject', reason = ''): Promise<SeriesDecision> {
  const path = decision === 'approve' ? '/api/v1/series/{id}/approve/' : '/api/v1/series/{id}/reject/'
  return unwrap(api.POST(path, { params: { path: { id } }, body: { reason } }))
}

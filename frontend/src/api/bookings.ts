import { api, unwrap } from './client'
import type { Booking, BookingCreate, BookingStatus, Page } from './types'

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

export function getBooking(id: number): Promise<Booking> {
  return unwrap(api.GET('/api/v1/bookings/{id}/', { params: { path: { id } } }))
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

export function approveBooking(id: number, reason = ''): Promise<Booking> {
  return unwrap(api.POST('/api/v1/bookings/{id}/approve/', { params: { path: { id } }, body: { reason } }))
}

export function rejectBooking(id: number, reason: string): Promise<Booking> {
  return unwrap(
    api.POST('/api/v1/bookings/{id}/reject/', { params: { path: { id } }, body: { reason } }),
  )
}

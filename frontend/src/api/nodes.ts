import { api, fetchAllPages, MAX_PAGE_SIZE, unwrap } from './client'
import type { BookingUtilisation, HealthReport, InstanceTypeHealth, Node, NodeStatus } from './types'

export function listNodes(filters: { status?: NodeStatus; booking?: number } = {}): Promise<Node[]> {
  return fetchAllPages((page) =>
    unwrap(api.GET('/api/v1/nodes/', { params: { query: { ...filters, page, page_size: MAX_PAGE_SIZE } } })),
  )
}

export function nodeHealth(id: number): Promise<HealthReport[]> {
  return unwrap(api.GET('/api/v1/nodes/{id}/health/', { params: { path: { id } } }))
}

export function instanceTypeHealth(id: number): Promise<InstanceTypeHealth> {
  return unwrap(api.GET('/api/v1/instance-types/{id}/health/', { params: { path: { id } } }))
}

/** Run the node's pending provider step again (site admins; audited). */
export function retryNode(id: number): Promise<Node> {
  return unwrap(api.POST('/api/v1/nodes/{id}/retry/', { params: { path: { id } } }))
}

/** Give the node up and tear it down; its booking gets a replacement if it may (audited). */
export function destroyNode(id: number, reason = ''): Promise<Node> {
  return unwrap(api.POST('/api/v1/nodes/{id}/destroy/', { params: { path: { id } }, body: { reason } }))
}

/** The booking node's live utilisation: totals, idle state and recent samples (oldest first). */
export function bookingUtilisation(id: number): Promise<BookingUtilisation> {
  return unwrap(api.GET('/api/v1/bookings/{id}/utilisation/', { params: { path: { id } } }))
}

/** Answer an idle warning: the node is in use, keep the booking (audited). */
export function keepBooking(id: number): Promise<BookingUtilisation> {
  return unwrap(api.POST('/api/v1/bookings/{id}/keep/', { params: { path: { id } } }))
}

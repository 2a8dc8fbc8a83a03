import { api, fetchAllPages, MAX_PAGE_SIZE, unwrap } from './client'
import type { HealthReport, InstanceTypeHealth, Node, NodeStatus } from './types'

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

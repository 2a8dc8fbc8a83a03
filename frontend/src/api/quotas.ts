import { api, fetchAllPages, MAX_PAGE_SIZE, unwrap } from './client'
import type { Quota, QuotaRequest, QuotaRequestCreate, QuotaRequestStatus } from './types'

const page_size = MAX_PAGE_SIZE

export function listQuotas(filters: { lab?: number; month?: string; instance_type?: number } = {}): Promise<Quota[]> {
  return fetchAllPages((page) =>
    unwrap(api.GET('/api/v1/quotas/', { params: { query: { ...filters, page, page_size } } })),
  )
}

export function listQuotaRequests(
  filters: { status?: QuotaRequestStatus; lab?: number } = {},
): Promise<QuotaRequest[]> {
  return fetchAllPages((page) =>
    unwrap(api.GET('/api/v1/quota-requests/', { params: { query: { ...filters, page, page_size } } })),
  )
}

export function createQuotaRequest(input: QuotaRequestCreate): Promise<QuotaRequest> {
  return unwrap(api.POST('/api/v1/quota-requests/', { body: input }))
}

export function approveQuotaRequest(id: number, reason = ''): Promise<QuotaRequest> {
  return unwrap(
    api.POST('/api/v1/quota-requests/{id}/approve/', { params: { path: { id } }, body: { reason } }),
  )
}

export function rejectQuotaRequest(id: number, reason: string): Promise<QuotaRequest> {
  return unwrap(
    api.POST('/api/v1/quota-requests/{id}/reject/', { params: { path: { id } }, body: { reason } }),
  )
}

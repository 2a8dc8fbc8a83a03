import { api, unwrap } from './client'
import type { Quota, QuotaRequest, QuotaRequestCreate } from './types'

export function listQuotas(filters: { lab?: number; month?: string } = {}): Promise<Quota[]> {
  return unwrap(api.GET('/api/v1/quotas/', { params: { query: filters } }))
}

export function listQuotaRequests(
  filters: { status?: string; lab?: number } = {},
): Promise<QuotaRequest[]> {
  return unwrap(api.GET('/api/v1/quota-requests/', { params: { query: filters } }))
}

export function createQuotaRequest(input: QuotaRequestCreate): Promise<QuotaRequest> {
  return unwrap(api.POST('/api/v1/quota-requests/', { body: input }))
}

export function approveQuotaRequest(id: number): Promise<QuotaRequest> {
  return unwrap(api.POST('/api/v1/quota-requests/{id}/approve/', { params: { path: { id } } }))
}

export function rejectQuotaRequest(id: number, reason: string): Promise<QuotaRequest> {
  return unwrap(
    api.POST('/api/v1/quota-requests/{id}/reject/', { params: { path: { id } }, body: { reason } }),
  )
}

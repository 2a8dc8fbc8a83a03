import { api, unwrap } from './client'
import type { StorageRow, UsageRow } from './types'

export type UsageGroup = 'lab' | 'user' | 'pool' | 'day' | 'instance_type' | 'booking' | 'cost_centre'

export interface UsageQuery {
  start: string
  end: string
  group_by: UsageGroup[]
  lab?: number
}

export function usage(query: UsageQuery): Promise<UsageRow[]> {
  return unwrap(
    api.GET('/api/v1/usage/', {
      params: { query: { ...query, group_by: query.group_by.join(','), format: 'json' } },
    }),
  )
}

/** The same rows as CSV, for a download link (the session cookie authorises it). */
export function usageCsvUrl(query: UsageQuery): string {
  const params = new URLSearchParams({
    start: query.start,
    end: query.end,
    group_by: query.group_by.join(','),
    format: 'csv',
  })
  if (query.lab != null) params.set('lab', String(query.lab))
  return `/api/v1/usage/?${params}`
}

/** Persistent-volume storage per lab in [start, end): GB-months and cost (beside GPU usage). */
export function storageUsage(query: { start: string; end: string }): Promise<StorageRow[]> {
  return unwrap(api.GET('/api/v1/usage/storage/', { params: { query } }))
}

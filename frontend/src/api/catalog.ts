import { api, unwrap } from './client'
import type { Availability, Blackout, BusyBlock, InstanceType, Lab, Pool } from './types'

export function listLabs(): Promise<Lab[]> {
  return unwrap(api.GET('/api/v1/labs/'))
}

export function listInstanceTypes(): Promise<InstanceType[]> {
  return unwrap(api.GET('/api/v1/instance-types/'))
}

export function listPools(): Promise<Pool[]> {
  return unwrap(api.GET('/api/v1/pools/'))
}

export function listBlackouts(pool: number): Promise<Blackout[]> {
  return unwrap(api.GET('/api/v1/blackouts/', { params: { query: { pool } } }))
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
  return unwrap(api.GET('/api/v1/pools/{id}/busy/', { params: { path: { id: pool }, query: range } }))
}

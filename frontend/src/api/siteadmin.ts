// The site admin's daily work: catalog (provider accounts, instance types, pools, prices), labs
// and quotas. Every write is checked and audited by the API; errors carry the field they are about.
import { api, fetchAllPages, MAX_PAGE_SIZE, unwrap } from './client'
import type { components } from './schema'
import type { InstanceType, Lab, Pool, Quota } from './types'

type Schemas = components['schemas']
export type ProviderAccount = Schemas['ProviderAccount']
export type ProviderAccountInput = Schemas['ProviderAccountRequest']
export type InstanceTypeInput = Schemas['InstanceTypeRequest']
export type PoolInput = Schemas['NodePoolRequest']
export type QuotaInput = Schemas['QuotaWriteRequest']

const page_size = MAX_PAGE_SIZE

export function listProviderAccounts(): Promise<ProviderAccount[]> {
  return fetchAllPages((page) =>
    unwrap(api.GET('/api/v1/provider-accounts/', { params: { query: { page, page_size } } })),
  )
}

export function saveProviderAccount(id: number | null, body: ProviderAccountInput): Promise<ProviderAccount> {
  return id == null
    ? unwrap(api.POST('/api/v1/provider-accounts/', { body }))
    : unwrap(api.PATCH('/api/v1/provider-accounts/{id}/', { params: { path: { id } }, body }))
}

/** Every instance type, inactive ones too (the shared catalog keeps only what can be booked). */
export function listAllInstanceTypes(): Promise<InstanceType[]> {
  return fetchAllPages((page) =>
    unwrap(api.GET('/api/v1/instance-types/', { params: { query: { page, page_size } } })),
  )
}

export function saveInstanceType(id: number | null, body: Partial<InstanceTypeInput>): Promise<InstanceType> {
  return id == null
    ? unwrap(api.POST('/api/v1/instance-types/', { body: body as InstanceTypeInput }))
    : unwrap(api.PATCH('/api/v1/instance-types/{id}/', { params: { path: { id } }, body }))
}

export function listAllPools(): Promise<Pool[]> {
  return fetchAllPages((page) => unwrap(api.GET('/api/v1/pools/', { params: { query: { page, page_size } } })))
}

export function savePool(id: number | null, body: Partial<PoolInput>): Promise<Pool> {
  return id == null
    ? unwrap(api.POST('/api/v1/pools/', { body: body as PoolInput }))
    : unwrap(api.PATCH('/api/v1/pools/{id}/', { params: { path: { id } }, body }))
}

export function createLab(body: { name: string; slug?: string }): Promise<Lab> {
  return unwrap(api.POST('/api/v1/labs/', { body }))
}

export function updateLab(id: number, body: { name?: string; is_active?: boolean }): Promise<Lab> {
  return unwrap(api.PATCH('/api/v1/labs/{id}/', { params: { path: { id } }, body }))
}

/** Set a lab's GPU-hours for one instance type and month (replaces what was set). */
export function setQuota(body: QuotaInput): Promise<Quota> {
  return unwrap(api.POST('/api/v1/quotas/', { body }))
}

import { api, fetchAllPages, MAX_PAGE_SIZE, unwrap } from './client'
import type { GroupMapping, GroupMappingCreate } from './types'

const page_size = MAX_PAGE_SIZE

/** Directory groups → lab roles or site admin (site admins only). */
export function listGroupMappings(): Promise<GroupMapping[]> {
  return fetchAllPages((page) =>
    unwrap(api.GET('/api/v1/sso/group-mappings/', { params: { query: { page, page_size } } })),
  )
}

export function createGroupMapping(input: GroupMappingCreate): Promise<GroupMapping> {
  return unwrap(api.POST('/api/v1/sso/group-mappings/', { body: input }))
}

export async function deleteGroupMapping(id: number): Promise<void> {
  await unwrap(api.DELETE('/api/v1/sso/group-mappings/{id}/', { params: { path: { id } } }))
}

import { api, fetchAllPages, MAX_PAGE_SIZE, unwrap } from './client'
import type { Lab, Member, MemberCreate, MemberPatch } from './types'

const page_size = MAX_PAGE_SIZE
const labPath = (lab: number) => ({ lab_pk: String(lab) })

/** The labs the user may see: their own, or every lab for a site admin. */
export function listLabs(): Promise<Lab[]> {
  return fetchAllPages((page) => unwrap(api.GET('/api/v1/labs/', { params: { query: { page, page_size } } })))
}

export function listMembers(lab: number): Promise<Member[]> {
  return fetchAllPages((page) =>
    unwrap(
      api.GET('/api/v1/labs/{lab_pk}/members/', { params: { path: labPath(lab), query: { page, page_size } } }),
    ),
  )
}

export function addMember(lab: number, input: MemberCreate): Promise<Member> {
  return unwrap(api.POST('/api/v1/labs/{lab_pk}/members/', { params: { path: labPath(lab) }, body: input }))
}

export function updateMember(lab: number, id: number, patch: MemberPatch): Promise<Member> {
  return unwrap(
    api.PATCH('/api/v1/labs/{lab_pk}/members/{id}/', { params: { path: { ...labPath(lab), id } }, body: patch }),
  )
}

export async function removeMember(lab: number, id: number): Promise<void> {
  await unwrap(api.DELETE('/api/v1/labs/{lab_pk}/members/{id}/', { params: { path: { ...labPath(lab), id } } }))
}

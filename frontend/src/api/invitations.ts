import { api, unwrap } from './client'
import { ensureCsrfCookie } from './auth'
import type {
  Invitation,
  InvitationAccepted,
  InvitationCreated,
  InvitationPreview,
  Me,
  MemberRole,
} from './types'

const labPath = (lab: number) => ({ lab_pk: String(lab) })

/** A lab's pending invitations (its lab admins only). */
export function listInvitations(lab: number): Promise<Invitation[]> {
  return unwrap(api.GET('/api/v1/labs/{lab_pk}/invitations/', { params: { path: labPath(lab) } }))
}

export function createInvitation(lab: number, input: { email: string; role: MemberRole }): Promise<InvitationCreated> {
  return unwrap(api.POST('/api/v1/labs/{lab_pk}/invitations/', { params: { path: labPath(lab) }, body: input }))
}

export async function revokeInvitation(lab: number, id: number): Promise<void> {
  await unwrap(
    api.DELETE('/api/v1/labs/{lab_pk}/invitations/{id}/', { params: { path: { ...labPath(lab), id } } }),
  )
}

/** What a link offers; the secret goes in the body, never in a URL the server logs. */
export function previewInvitation(token: string): Promise<InvitationPreview> {
  return unwrap(api.POST('/api/v1/invitations/preview/', { body: { token } }))
}

/** Join; `confirmOtherAddress` when the invitation went to another address than the account's verified one. */
export function acceptInvitation(token: string, confirmOtherAddress = false): Promise<InvitationAccepted> {
  return unwrap(
    api.POST('/api/v1/invitations/accept/', { body: { token, confirm_other_address: confirmOtherAddress } }),
  )
}

/** Make a local account from the invitation; the server signs it in. */
export async function signUpFromInvitation(input: { token: string; username: string; password: string }): Promise<Me> {
  await ensureCsrfCookie()
  return unwrap(api.POST('/api/v1/invitations/sign-up/', { body: input }))
}

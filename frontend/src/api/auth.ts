import { api, unwrap } from './client'
import type { AuthProviders, Me, MePatch, MyIdentities, SshKey } from './types'

export async function ensureCsrfCookie(): Promise<void> {
  await api.GET('/api/v1/auth/csrf/')
}

export async function login(username: string, password: string): Promise<Me> {
  await ensureCsrfCookie()
  return unwrap(api.POST('/api/v1/auth/login/', { body: { username, password } }))
}

/** Ends the session; returns the identity provider's end-session page to visit next, if any. */
export async function logout(): Promise<string | null> {
  const result = await unwrap(api.POST('/api/v1/auth/logout/'))
  return result.redirect_url ?? null
}

/** How one may sign in here (no session needed): SSO buttons, and whether passwords are taken. */
export function fetchAuthProviders(): Promise<AuthProviders> {
  return unwrap(api.GET('/api/v1/auth/providers/'))
}

export function fetchMe(): Promise<Me> {
  return unwrap(api.GET('/api/v1/me/'))
}

export function updateMe(patch: MePatch): Promise<Me> {
  return unwrap(api.PATCH('/api/v1/me/', { body: patch }))
}

/** Mail a verification link to `email` (a new address, or the one in effect while unverified). */
export function requestEmailVerification(email: string): Promise<Me> {
  return unwrap(api.POST('/api/v1/me/email/', { body: { email } }))
}

/** Open a verification link; the secret goes in the body, never in a URL the server logs. */
export function verifyEmail(token: string): Promise<{ email: string }> {
  return unwrap(api.POST('/api/v1/email/verify/', { body: { token } }))
}

export function listSshKeys(): Promise<SshKey[]> {
  return unwrap(api.GET('/api/v1/me/ssh-keys/'))
}

export function addSshKey(name: string, publicKey: string): Promise<SshKey> {
  return unwrap(api.POST('/api/v1/me/ssh-keys/', { body: { name, public_key: publicKey } }))
}

export async function deleteSshKey(id: number): Promise<void> {
  await unwrap(api.DELETE('/api/v1/me/ssh-keys/{id}/', { params: { path: { id } } }))
}

/** The external identities bound to my account, and the provider link to bind one (issue 22). */
export function fetchMyIdentities(): Promise<MyIdentities> {
  return unwrap(api.GET('/api/v1/me/identities/'))
}

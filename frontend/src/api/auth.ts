import { api, unwrap } from './client'
import type { Me, MePatch, SshKey } from './types'

export async function ensureCsrfCookie(): Promise<void> {
  await api.GET('/api/v1/auth/csrf/')
}

export async function login(username: string, password: string): Promise<Me> {
  await ensureCsrfCookie()
  return unwrap(api.POST('/api/v1/auth/login/', { body: { username, password } }))
}

export async function logout(): Promise<void> {
  await unwrap(api.POST('/api/v1/auth/logout/'))
}

export function fetchMe(): Promise<Me> {
  return unwrap(api.GET('/api/v1/me/'))
}

export function updateMe(patch: MePatch): Promise<Me> {
  return unwrap(api.PATCH('/api/v1/me/', { body: patch }))
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

import { api, unwrap } from './client'
import type { ApiToken, ApiTokenCreated, ApiTokenScope } from './types'

export function listTokens(): Promise<ApiToken[]> {
  return unwrap(api.GET('/api/v1/tokens/'))
}

export function createToken(input: {
  name: string
  scopes: ApiTokenScope[]
  expires_at: string | null
}): Promise<ApiTokenCreated> {
  return unwrap(api.POST('/api/v1/tokens/', { body: input }))
}

export async function revokeToken(id: number): Promise<void> {
  await unwrap(api.DELETE('/api/v1/tokens/{id}/', { params: { path: { id } } }))
}

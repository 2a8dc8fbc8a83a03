import { api, unwrap } from './client'
import type { Volume } from './types'

export function listVolumes(): Promise<Volume[]> {
  return unwrap(api.GET('/api/v1/volumes/'))
}

export async function deleteVolume(id: number): Promise<void> {
  await unwrap(api.DELETE('/api/v1/volumes/{id}/', { params: { path: { id } } }))
}

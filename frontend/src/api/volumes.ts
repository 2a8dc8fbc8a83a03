import { api, unwrap } from './client'
import type { LabVolumeSize, UntrackedVolume, Volume, VolumeCreate } from './types'

export function listVolumes(): Promise<Volume[]> {
  return unwrap(api.GET('/api/v1/volumes/'))
}

export async function deleteVolume(id: number): Promise<void> {
  await unwrap(api.DELETE('/api/v1/volumes/{id}/', { params: { path: { id } } }))
}

export function listUntrackedVolumes(): Promise<UntrackedVolume[]> {
  return unwrap(api.GET('/api/v1/volumes/untracked/'))
}

export function getLabVolumeSize(labId: number): Promise<LabVolumeSize> {
  return unwrap(api.GET('/api/v1/volumes/lab-size/{lab_id}/', { params: { path: { lab_id: labId } } }))
}

export function setLabVolumeSize(labId: number, sizeGb: number): Promise<LabVolumeSize> {
  return unwrap(
    api.PUT('/api/v1/volumes/lab-size/{lab_id}/', {
      params: { path: { lab_id: labId } },
      body: { size_gb: sizeGb },
    }),
  )
}

/** A new volume in one of a pool's regions; a worker makes it at the provider (state `creating`). */
export function createVolume(body: VolumeCreate): Promise<Volume> {
  return unwrap(api.POST('/api/v1/volumes/', { body }))
}

/** Grow a volume (volumes only grow); `resize_to_gb` shows the size until the provider accepted it. */
export function resizeVolume(id: number, sizeGb: number): Promise<Volume> {
  return unwrap(api.POST('/api/v1/volumes/{id}/resize/', { params: { path: { id } }, body: { size_gb: sizeGb } }))
}

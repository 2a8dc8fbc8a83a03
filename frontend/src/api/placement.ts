// Flexible placement (docs/api.md, "Any GPU of a model, earliest"): where N hours of a GPU model
// fit across the pools your lab may book, and booking the earliest of them.
import { api, unwrap } from './client'
import type { components, operations } from './schema'
import type { Booking } from './types'

type Schemas = components['schemas']
export type PlacementWindow = Schemas['PlacementWindow']
export type PlacementAvailability = Schemas['PlacementAvailability']
export type PlacementBook = Schemas['PlacementBookRequest']
export type PlacementQuery = NonNullable<operations['v1_availability_placement_retrieve']['parameters']['query']>

export function placementAvailability(query: PlacementQuery): Promise<PlacementAvailability> {
  return unwrap(api.GET('/api/v1/availability/placement/', { params: { query } }))
}

/** Book the earliest window; a 409 `no_placement` carries `extra.alternatives` (PlacementWindow[]). */
export function placeBooking(input: PlacementBook): Promise<Booking> {
  return unwrap(api.POST('/api/v1/bookings/place/', { body: input }))
}

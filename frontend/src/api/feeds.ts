import { api, unwrap } from './client'
import type { CalendarFeed, CalendarFeedCreated, FeedKind } from './types'

/** The signed-in user's ICS subscription feeds, revoked ones included (newest first). */
export function listFeeds(): Promise<CalendarFeed[]> {
  return unwrap(api.GET('/api/v1/feeds/'))
}

/** A new feed; its `url` carries the secret and is returned only this once. */
export function createFeed(input: { kind: FeedKind; pool?: number | null }): Promise<CalendarFeedCreated> {
  return unwrap(api.POST('/api/v1/feeds/', { body: input }))
}

export async function revokeFeed(id: number): Promise<void> {
  await unwrap(api.DELETE('/api/v1/feeds/{id}/', { params: { path: { id } } }))
}

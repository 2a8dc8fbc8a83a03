import { api, unwrap } from './client'
import type { ChatChannel, ChatChannelCreate, ChatChannelUpdate, ChatDelivery, ChatEvent } from './types'

/** The events a channel can subscribe to, in the order the forms list them. */
export const CHAT_EVENTS: ChatEvent[] = [
  'booking_ready',
  'booking_ending_soon',
  'booking_failed',
  'approval_needed',
  'booking_decided',
  'quota_threshold',
  'budget_threshold',
  'idle_warning',
  'volume_near_full',
  'waitlist_offer',
]

/** Your chat channels and those of the labs you administer. */
export function listChatChannels(): Promise<ChatChannel[]> {
  return unwrap(api.GET('/api/v1/chat-channels/'))
}

/** A new channel; its URL and secret are stored encrypted and never come back. */
export function createChatChannel(input: ChatChannelCreate): Promise<ChatChannel> {
  return unwrap(api.POST('/api/v1/chat-channels/', { body: input }))
}

/** Change a channel; a new `url` or `secret` replaces the stored one, which never comes back. */
export function updateChatChannel(id: number, input: ChatChannelUpdate): Promise<ChatChannel> {
  return unwrap(api.PATCH('/api/v1/chat-channels/{id}/', { params: { path: { id } }, body: input }))
}

export async function deleteChatChannel(id: number): Promise<void> {
  await unwrap(api.DELETE('/api/v1/chat-channels/{id}/', { params: { path: { id } } }))
}

/** Queue a test message; the delivery log shows how it went. */
export function testChatChannel(id: number): Promise<ChatDelivery> {
  return unwrap(api.POST('/api/v1/chat-channels/{id}/test/', { params: { path: { id } } }))
}

export function listChatDeliveries(id: number): Promise<ChatDelivery[]> {
  return unwrap(api.GET('/api/v1/chat-channels/{id}/deliveries/', { params: { path: { id } } }))
}

import { api, unwrap } from './client'
import type { ChatChannel, ChatChannelCreate, ChatDelivery } from './types'

/** Your chat channels and those of the labs you administer. */
export function listChatChannels(): Promise<ChatChannel[]> {
  return unwrap(api.GET('/api/v1/chat-channels/'))
}

/** A new channel; its URL and secret are stored encrypted and never come back. */
export function createChatChannel(input: ChatChannelCreate): Promise<ChatChannel> {
  return unwrap(api.POST('/api/v1/chat-channels/', { body: input }))
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

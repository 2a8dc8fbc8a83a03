import { api, unwrap } from './client'
import type { Page } from './types'
import type { components } from './schema'

/** Named apart from the browser's own `Notification`. */
export type AppNotification = components['schemas']['Notification']

/** What the signed-in person was e-mailed, newest first (`unread`: only the unread ones). */
export function listNotifications(query: { unread?: boolean; page?: number; page_size?: number } = {}): Promise<Page<AppNotification>> {
  return unwrap(api.GET('/api/v1/notifications/', { params: { query } }))
}

export function markNotificationRead(id: number): Promise<{ marked: number }> {
  return unwrap(api.POST('/api/v1/notifications/{id}/read/', { params: { path: { id } } }))
}

export function markAllNotificationsRead(): Promise<{ marked: number }> {
  return unwrap(api.POST('/api/v1/notifications/read-all/'))
}

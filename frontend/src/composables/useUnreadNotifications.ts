import { ref } from 'vue'

import { listNotifications } from '@/api/notifications'

// One count for the whole app: the header's badge and the notification page share it.
const count = ref(0)
let inFlight: Promise<void> | null = null

/** How many notifications the signed-in person has not read; `refresh` asks the server again. */
export function useUnreadNotifications() {
  function refresh(): Promise<void> {
    // Only the count is used: a one-row page, not a page of message bodies.
    inFlight ??= listNotifications({ unread: true, page_size: 1 })
      .then((page) => {
        count.value = page.count
      })
      .catch(() => {
        // The badge is a hint: a failed count leaves the last one rather than an error.
      })
      .finally(() => {
        inFlight = null
      })
    return inFlight
  }
  return { count, refresh }
}

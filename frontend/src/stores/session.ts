import { computed, ref } from 'vue'
import { defineStore } from 'pinia'

import * as authApi from '@/api/auth'
import { ApiError } from '@/api/client'
import type { Me } from '@/api/types'
import { browserTimeZone, isValidTimeZone } from '@/utils/time'

/**
 * Whether the page this app was loaded with says there was no session: the server serves it so to
 * a signed-out visitor. It holds for the first load only (later loads, after signing in, ask the API).
 */
export function pageSaysSignedOut(): boolean {
  return typeof document !== 'undefined' && document.querySelector('meta[name="labgpu-session"][content="signed-out"]') !== null
}

/** Who is signed in. Server data beyond the user itself lives in views and composables. */
export const useSessionStore = defineStore('session', () => {
  const me = ref<Me | null>(null)
  const loaded = ref(false)

  const isAuthenticated = computed(() => me.value !== null)
  const isSiteAdmin = computed(() => me.value?.is_site_admin ?? false)
  const adminLabIds = computed(
    () => me.value?.memberships.filter((m) => m.role === 'lab_admin').map((m) => m.lab.id) ?? [],
  )
  const isLabAdmin = computed(() => adminLabIds.value.length > 0)
  const labs = computed(() => me.value?.memberships.map((m) => m.lab) ?? [])
  const timeZone = computed(() => {
    const tz = me.value?.timezone
    return tz && isValidTimeZone(tz) ? tz : browserTimeZone()
  })

  async function load(): Promise<void> {
    if (!loaded.value && pageSaysSignedOut()) {
      // The server said so in the page itself (labgpu.core.views.spa_index): no 401 to ask for.
      me.value = null
      loaded.value = true
      return
    }
    try {
      me.value = await authApi.fetchMe()
    } catch (e) {
      if (!(e instanceof ApiError)) throw e
      me.value = null
    } finally {
      loaded.value = true
    }
  }

  async function login(username: string, password: string): Promise<Me> {
    me.value = await authApi.login(username, password)
    loaded.value = true
    return me.value
  }

  /** Ends the session; returns where the browser goes next when single sign-on ends there too. */
  async function logout(): Promise<string | null> {
    try {
      return await authApi.logout()
    } finally {
      me.value = null
    }
  }

  function forget(): void {
    me.value = null
  }

  function setMe(value: Me): void {
    me.value = value
  }

  return {
    me,
    loaded,
    isAuthenticated,
    isSiteAdmin,
    isLabAdmin,
    adminLabIds,
    labs,
    timeZone,
    load,
    login,
    logout,
    forget,
    setMe,
  }
})

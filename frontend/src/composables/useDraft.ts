import { onBeforeUnmount, onMounted, ref } from 'vue'

// What the open forms would lose if the page left now: each registers how to read its fields.
const savers = new Set<() => void>()
const PREFIX = 'labgpu.draft.'

/**
 * Keep what a form holds when the session expires under it (main.ts calls `saveDrafts` before it
 * sends the person to sign in): saved in this tab's sessionStorage under `key`, and put back into
 * the form the next time it mounts (after signing in, back on the same page), then forgotten.
 * `restored` says whether the form shows a kept draft.
 */
export function useDraft<T>(key: string, read: () => T, restore: (draft: T) => void) {
  const restored = ref(false)
  const save = () => {
    try {
      sessionStorage.setItem(PREFIX + key, JSON.stringify(read()))
    } catch {
      /* storage full or off: the page still goes to sign-in */
    }
  }
  onMounted(() => {
    savers.add(save)
    const saved = sessionStorage.getItem(PREFIX + key)
    if (saved === null) return
    sessionStorage.removeItem(PREFIX + key)
    try {
      restore(JSON.parse(saved) as T)
      restored.value = true
    } catch {
      /* a draft of an older version of the form: drop it */
    }
  })
  onBeforeUnmount(() => savers.delete(save))
  return { restored }
}

/** Save every open form's draft; whether there was any to save. */
export function saveDrafts(): boolean {
  savers.forEach((save) => save())
  return savers.size > 0
}

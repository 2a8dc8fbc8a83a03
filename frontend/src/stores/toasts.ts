import { ref } from 'vue'
import { defineStore } from 'pinia'

export interface Toast {
  id: number
  kind: 'success' | 'error' | 'info'
  text: string
}

/** Transient notices (UI state only). */
export const useToastStore = defineStore('toasts', () => {
  const toasts = ref<Toast[]>([])
  let next = 1

  function push(kind: Toast['kind'], text: string, ttlMs = 5000): void {
    const id = next++
    toasts.value.push({ id, kind, text })
    if (ttlMs > 0) setTimeout(() => dismiss(id), ttlMs)
  }

  function dismiss(id: number): void {
    toasts.value = toasts.value.filter((t) => t.id !== id)
  }

  return { toasts, push, dismiss }
})

import { ref } from 'vue'
import { defineStore } from 'pinia'

export interface ConfirmRequest {
  message: string
  /** The confirming button's label (defaults to "Confirm"). */
  confirmLabel?: string
  /** A destructive action: the confirming button is red. */
  danger?: boolean
}

interface Pending extends ConfirmRequest {
  resolve: (ok: boolean) => void
}

/** The app's own confirm dialog (instead of `window.confirm`): one question at a time (UI state). */
export const useConfirmStore = defineStore('confirm', () => {
  const pending = ref<Pending | null>(null)

  function ask(request: ConfirmRequest): Promise<boolean> {
    pending.value?.resolve(false) // a newer question replaces an unanswered one
    return new Promise((resolve) => {
      pending.value = { ...request, resolve }
    })
  }

  function answer(ok: boolean): void {
    const current = pending.value
    pending.value = null
    current?.resolve(ok)
  }

  return { pending, ask, answer }
})

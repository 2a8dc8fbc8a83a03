import { ref } from 'vue'
import { defineStore } from 'pinia'

export interface ConfirmRequest {
  message: string
  /** The confirming button's label (defaults to "Confirm"). */
  confirmLabel?: string
  /** A destructive action: the confirming button is red. */
  danger?: boolean
  /** Options to pick one of (radio buttons, the first preselected); `choose` resolves to its index. */
  choices?: string[]
  /** What the options are, read out as the radio group's name. */
  choicesLabel?: string
  /** Ask for a reason (a required text field with this label); `askReason` resolves to it. */
  reasonLabel?: string
}

interface Pending extends ConfirmRequest {
  resolve: (ok: boolean) => void
}

/** The app's own confirm dialog (instead of `window.confirm`): one question at a time (UI state). */
export const useConfirmStore = defineStore('confirm', () => {
  const pending = ref<Pending | null>(null)
  /** The index of the picked choice while a question with `choices` is open. */
  const choice = ref(0)
  /** The reason typed while a question with `reasonLabel` is open. */
  const reason = ref('')

  function ask(request: ConfirmRequest): Promise<boolean> {
    pending.value?.resolve(false) // a newer question replaces an unanswered one
    choice.value = 0
    reason.value = ''
    return new Promise((resolve) => {
      pending.value = { ...request, resolve }
    })
  }

  function answer(ok: boolean): void {
    const current = pending.value
    pending.value = null
    current?.resolve(ok)
  }

  /** Ask with `choices`: the picked index, or null when cancelled. */
  async function choose(request: ConfirmRequest & { choices: string[] }): Promise<number | null> {
    return (await ask(request)) ? choice.value : null
  }

  /** Ask with `reasonLabel`: the reason typed (never empty), or null when cancelled. */
  async function askReason(request: ConfirmRequest & { reasonLabel: string }): Promise<string | null> {
    return (await ask(request)) ? reason.value.trim() : null
  }

  return { pending, choice, reason, ask, choose, askReason, answer }
})

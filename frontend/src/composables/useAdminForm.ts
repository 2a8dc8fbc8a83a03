import { nextTick, ref } from 'vue'

import { ApiError } from '@/api/client'
import { useApiError } from '@/composables/useApiError'

/**
 * A create-or-edit form over one API record: `edit(id, values)` loads a record, `submit(save)`
 * calls the API and spreads its field errors under the fields; anything else is the form's error.
 */
export function useAdminForm<T extends Record<string, unknown>>(blank: () => T, focusId?: string) {
  const describe = useApiError()
  const values = ref<Record<string, unknown>>(blank())
  const errors = ref<Record<string, string[]>>({})
  const formError = ref<string | null>(null)
  const busy = ref(false)
  const editingId = ref<number | null>(null)

  function reset() {
    values.value = blank()
    errors.value = {}
    formError.value = null
    editingId.value = null
  }

  function edit(id: number, current: Partial<T>) {
    reset()
    editingId.value = id
    values.value = { ...blank(), ...current }
    // The form sits below the list: take the admin there (focus scrolls it into view).
    if (focusId) void nextTick(() => document.getElementById(focusId)?.focus())
  }

  async function submit(save: (id: number | null, body: T) => Promise<unknown>): Promise<boolean> {
    errors.value = {}
    formError.value = null
    busy.value = true
    try {
      await save(editingId.value, values.value as T)
      reset()
      return true
    } catch (e) {
      if (e instanceof ApiError && Object.keys(e.fields).length) errors.value = e.fields
      else formError.value = describe(e)
      return false
    } finally {
      busy.value = false
    }
  }

  return { values, errors, formError, busy, editingId, reset, edit, submit }
}

import { useI18n } from 'vue-i18n'

import { ApiError } from '@/api/client'

/** Turn anything thrown by an API call into a sentence for the user. */
export function useApiError() {
  const { t, te } = useI18n()
  return function describe(error: unknown): string {
    if (error instanceof ApiError) {
      const key = `errors.code.${error.code}`
      if (te(key)) return t(key)
      if (error.message) return error.message
      return t('errors.http', { status: error.status })
    }
    return t('errors.network')
  }
}

import { useI18n } from 'vue-i18n'

import { ApiError, NetworkError } from '@/api/client'

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
    if (error instanceof NetworkError) return t('errors.network')
    // A fault in the page itself: saying "check your connection" would send people the wrong way.
    console.error(error)
    return t('errors.unexpected')
  }
}

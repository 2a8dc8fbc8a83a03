import { useI18n } from 'vue-i18n'

import { ApiError, NetworkError } from '@/api/client'

type Figures = Record<string, unknown>

/**
 * Refusals whose figures the server sends (docs/api.md): said with them, in the user's language.
 * Each returns the message's parameters, or null when a figure is missing (then the code's
 * general sentence is used).
 */
const DETAILS: Record<string, (extra: Figures, n: (v: unknown) => string) => Record<string, string> | null> = {
  quota_exceeded: (x, n) =>
    x.needed_gpu_hours != null && x.remaining_gpu_hours != null && typeof x.month === 'string'
      ? { needed: n(x.needed_gpu_hours), remaining: n(x.remaining_gpu_hours), month: x.month.slice(0, 7) }
      : null,
  member_hours_exceeded: (x, n) =>
    x.limit_hours != null && x.remaining_hours != null && typeof x.week_start === 'string'
      ? { limit: n(x.limit_hours), remaining: n(x.remaining_hours), week: x.week_start }
      : null,
  member_concurrency_exceeded: (x, n) => (x.limit != null ? { limit: n(x.limit) } : null),
}

/** Turn anything thrown by an API call into a sentence for the user. */
export function useApiError() {
  const { t, te, n } = useI18n()
  const number = (v: unknown) => n(Number(v), { maximumFractionDigits: 2 })
  return function describe(error: unknown): string {
    if (error instanceof ApiError) {
      const params = DETAILS[error.code]?.(error.extra, number)
      if (params) return t(`errors.detail.${error.code}`, params)
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

import { useI18n } from 'vue-i18n'

import { useToastStore } from '@/stores/toasts'

/** Copy text to the clipboard and say how it went in a toast. */
export function useCopy() {
  const { t } = useI18n()
  const toasts = useToastStore()
  return async function copy(text: string): Promise<void> {
    try {
      await navigator.clipboard.writeText(text)
      toasts.push('success', t('common.copied'))
    } catch {
      toasts.push('error', t('common.copyFailed'))
    }
  }
}

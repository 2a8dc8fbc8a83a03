import { useI18n } from 'vue-i18n'

import type { Pool } from '@/api/types'

/**
 * A pool's name as an `<option>` reads it: the plain name, plus the translated "needs approval"
 * where the pool has that rule (an option cannot hold a badge element).
 */
export function usePoolLabel() {
  const { t } = useI18n()
  return (pool: Pick<Pool, 'name' | 'requires_approval'>): string =>
    pool.requires_approval ? t('pool.optionNeedsApproval', { name: pool.name }) : pool.name
}

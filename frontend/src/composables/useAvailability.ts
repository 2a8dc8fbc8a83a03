import { computed, ref, shallowRef, watch, type Ref } from 'vue'

import { poolAvailability } from '@/api/catalog'
import type { Availability } from '@/api/types'
import { useDebounced } from './useDebounced'

export interface AvailabilityQuery {
  pool: number | null
  start: Date | null
  end: Date | null
}

/** Live availability of a pool over the window being typed, debounced; null while unknown. */
export function useAvailability(query: Ref<AvailabilityQuery>, debounceMs = 300) {
  const settled = useDebounced(() => ({ ...query.value }), debounceMs, { pool: null, start: null, end: null })
  const data = shallowRef<Availability | null>(null)
  const loading = ref(false)
  const error = ref<unknown>(null)
  let generation = 0

  watch(settled, async (q) => {
    const mine = ++generation
    if (q.pool == null || !q.start || !q.end || !(q.end > q.start)) {
      data.value = null
      return
    }
    loading.value = true
    try {
      const value = await poolAvailability(q.pool, {
        start: q.start.toISOString(),
        end: q.end.toISOString(),
        duration_minutes: Math.round((q.end.getTime() - q.start.getTime()) / 60_000),
      })
      if (mine === generation) {
        data.value = value
        error.value = null
      }
    } catch (e) {
      if (mine === generation) {
        data.value = null
        error.value = e
      }
    } finally {
      if (mine === generation) loading.value = false
    }
  })

  /** The fewest free nodes at any moment of the window (0 means it cannot be booked). */
  const minFree = computed(() => {
    const intervals = data.value?.intervals ?? []
    if (!intervals.length) return data.value ? data.value.capacity : null
    return Math.min(...intervals.map((i) => i.free))
  })

  return { data, loading, error, minFree }
}

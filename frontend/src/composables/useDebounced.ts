import { ref, watch, type Ref, type WatchSource } from 'vue'

/** A copy of `source` that settles `ms` after the last change (for live queries as you type). */
export function useDebounced<T>(source: WatchSource<T>, ms: number, initial: T): Ref<T> {
  const out = ref(initial) as Ref<T>
  let timer: ReturnType<typeof setTimeout> | null = null
  watch(
    source,
    (value) => {
      if (timer) clearTimeout(timer)
      timer = setTimeout(() => {
        out.value = value
      }, ms)
    },
    { immediate: true },
  )
  return out
}

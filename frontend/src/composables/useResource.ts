import { onScopeDispose, ref, shallowRef, watch, type Ref, type WatchSource } from 'vue'

export interface Resource<T> {
  data: Ref<T | undefined>
  error: Ref<unknown>
  loading: Ref<boolean>
  reload: () => Promise<void>
}

/**
 * Server data for one view: load on creation and whenever `sources` change; the latest call wins,
 * so a slow answer to an old query never overwrites a newer one.
 */
export function useResource<T>(
  loader: () => Promise<T>,
  options: { sources?: WatchSource[]; immediate?: boolean } = {},
): Resource<T> {
  const data = shallowRef<T>()
  const error = ref<unknown>(null)
  const loading = ref(false)
  let generation = 0

  async function reload(): Promise<void> {
    const mine = ++generation
    loading.value = true
    try {
      const value = await loader()
      if (mine === generation) {
        data.value = value
        error.value = null
      }
    } catch (e) {
      if (mine === generation) error.value = e
    } finally {
      if (mine === generation) loading.value = false
    }
  }

  if (options.sources?.length) {
    const stop = watch(options.sources, () => void reload())
    onScopeDispose(stop)
  }
  if (options.immediate !== false) void reload()
  return { data, error, loading, reload }
}

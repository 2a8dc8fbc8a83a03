import { onScopeDispose, toValue, watch, type MaybeRefOrGetter } from 'vue'

/**
 * Call `tick` every `intervalMs` while `active` is true and the tab is visible; the next tick is
 * scheduled only after the previous one settled, so slow responses never pile up.
 */
export function usePolling(
  tick: () => Promise<unknown>,
  intervalMs: number,
  active: MaybeRefOrGetter<boolean> = true,
): { stop: () => void } {
  let timer: ReturnType<typeof setTimeout> | null = null
  let stopped = false

  function clear() {
    if (timer !== null) clearTimeout(timer)
    timer = null
  }

  function schedule() {
    clear()
    if (stopped || !toValue(active)) return
    timer = setTimeout(async () => {
      if (typeof document === 'undefined' || document.visibilityState !== 'hidden') {
        try {
          await tick()
        } catch {
          /* the view shows its own error; keep polling */
        }
      }
      schedule()
    }, intervalMs)
  }

  const stopWatch = watch(() => toValue(active), schedule, { immediate: true })

  function stop() {
    stopped = true
    stopWatch()
    clear()
  }

  onScopeDispose(stop)
  return { stop }
}

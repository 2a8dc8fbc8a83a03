import { effectScope, nextTick, ref } from 'vue'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

import { usePolling } from '../usePolling'
import { useResource } from '../useResource'

describe('usePolling', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  it('ticks while active and stops when the scope ends', async () => {
    const tick = vi.fn(async () => {})
    const active = ref(true)
    const scope = effectScope()
    scope.run(() => usePolling(tick, 1000, active))
    await vi.advanceTimersByTimeAsync(3100)
    expect(tick).toHaveBeenCalledTimes(3)
    active.value = false
    await nextTick()
    await vi.advanceTimersByTimeAsync(5000)
    expect(tick).toHaveBeenCalledTimes(3)
    active.value = true
    await nextTick()
    await vi.advanceTimersByTimeAsync(1000)
    expect(tick).toHaveBeenCalledTimes(4)
    scope.stop()
    await vi.advanceTimersByTimeAsync(5000)
    expect(tick).toHaveBeenCalledTimes(4)
  })
})

describe('useResource', () => {
  it('keeps the newest answer when an older request finishes last', async () => {
    const resolvers: ((v: string) => void)[] = []
    const scope = effectScope()
    const res = scope.run(() => useResource(() => new Promise<string>((r) => resolvers.push(r))))!
    const second = res.reload()
    resolvers[1]!('new')
    await second
    resolvers[0]!('old')
    await Promise.resolve()
    expect(res.data.value).toBe('new')
    expect(res.loading.value).toBe(false)
    scope.stop()
  })
})

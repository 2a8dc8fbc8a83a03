import { afterEach, describe, expect, it, vi } from 'vitest'

import { afterNextPaint } from '@/utils/afterPaint'

describe('afterNextPaint', () => {
  afterEach(() => {
    vi.restoreAllMocks()
    vi.useRealTimers()
  })

  it('waits for the next frame on a visible page', () => {
    vi.useFakeTimers()
    const frames: FrameRequestCallback[] = []
    vi.spyOn(window, 'requestAnimationFrame').mockImplementation((cb) => frames.push(cb))
    const work = vi.fn()
    afterNextPaint(work)
    vi.runAllTimers()
    expect(work).not.toHaveBeenCalled()
    frames.forEach((frame) => frame(0))
    vi.runAllTimers()
    expect(work).toHaveBeenCalledOnce()
  })

  it('does not wait for a frame a hidden tab never paints (its title still shows)', () => {
    vi.useFakeTimers()
    vi.spyOn(document, 'visibilityState', 'get').mockReturnValue('hidden')
    const frame = vi.spyOn(window, 'requestAnimationFrame').mockImplementation(() => 0)
    const work = vi.fn()
    afterNextPaint(work)
    vi.runAllTimers()
    expect(work).toHaveBeenCalledOnce()
    expect(frame).not.toHaveBeenCalled()
  })
})

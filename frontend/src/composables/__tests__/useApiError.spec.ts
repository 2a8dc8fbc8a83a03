import { defineComponent } from 'vue'
import { describe, expect, it, vi } from 'vitest'

import { ApiError, NetworkError, fetchOrNetworkError } from '@/api/client'
import { mountWithApp } from '@/__tests__/helpers'
import { useApiError } from '../useApiError'

function describer(locale: 'en' | 'zh-CN' = 'en') {
  let describe: ReturnType<typeof useApiError> | undefined
  mountWithApp(defineComponent({ setup: () => { describe = useApiError(); return () => null } }), { locale })
  return describe!
}

describe('useApiError', () => {
  it('calls only a failed connection a network error', async () => {
    const originalFetch = globalThis.fetch
    globalThis.fetch = vi.fn().mockRejectedValue(new TypeError('Failed to fetch'))
    try {
      const failure = await fetchOrNetworkError('/api/v1/me/').catch((e: unknown) => e)
      expect(failure).toBeInstanceOf(NetworkError)
      expect(describer()(failure)).toBe('Could not reach the server. Check your connection and try again.')
    } finally {
      globalThis.fetch = originalFetch
    }
  })

  it('does not blame the connection for a fault in the page', () => {
    const spy = vi.spyOn(console, 'error').mockImplementation(() => {})
    const bug = new TypeError('v.trim is not a function')
    expect(describer()(bug)).toBe('Something went wrong in this page; nothing was saved. Reload and try again.')
    expect(describer('zh-CN')(bug)).toBe('页面出错，未保存任何内容。请刷新后重试。')
    spy.mockRestore()
  })

  it('keeps the server’s own message for API errors', () => {
    expect(describer()(new ApiError(409, { message: 'Pool is full.', code: 'something_new' }))).toBe('Pool is full.')
  })
})

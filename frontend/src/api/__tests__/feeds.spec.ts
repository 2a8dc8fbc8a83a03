import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

import { ApiError } from '../client'
import { createFeed, listFeeds, revokeFeed } from '../feeds'

const feed = {
  id: 7,
  kind: 'pool',
  pool: 2,
  pool_name: 'MI300X ×1 · tor1',
  prefix: '1a2b3c4d',
  created_at: '2026-11-30T01:00:00Z',
  revoked_at: null,
}

function json(body: unknown, status = 200) {
  return new Response(status === 204 ? null : JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json' },
  })
}

describe('feeds API', () => {
  const seen: Request[] = []
  const fetchMock = vi.fn<(input: RequestInfo | URL, init?: RequestInit) => Promise<Response>>()

  beforeEach(() => {
    seen.length = 0
    document.cookie = 'csrftoken=feedcsrf'
    vi.stubGlobal('fetch', async (input: RequestInfo | URL, init?: RequestInit) => {
      seen.push(input as Request)
      return fetchMock(input, init)
    })
  })
  afterEach(() => {
    vi.unstubAllGlobals()
    fetchMock.mockReset()
  })

  it('lists the user’s feeds', async () => {
    fetchMock.mockResolvedValue(json([feed]))
    expect(await listFeeds()).toEqual([feed])
    expect(seen[0]!.method).toBe('GET')
    expect(new URL(seen[0]!.url).pathname).toBe('/api/v1/feeds/')
  })

  it('creates a feed with CSRF and returns the one-time URL', async () => {
    const url = 'http://testserver/api/v1/feeds/lgf_1a2b3c4d_secret.ics'
    fetchMock.mockResolvedValue(json({ ...feed, token: 'lgf_1a2b3c4d_secret', url }, 201))
    const created = await createFeed({ kind: 'pool', pool: 2 })
    expect(created.url).toBe(url)
    const request = seen[0]!
    expect(request.method).toBe('POST')
    expect(new URL(request.url).pathname).toBe('/api/v1/feeds/')
    expect(request.headers.get('X-CSRFToken')).toBe('feedcsrf')
    expect(await request.json()).toEqual({ kind: 'pool', pool: 2 })
  })

  it('revokes a feed by id', async () => {
    fetchMock.mockResolvedValue(json(null, 204))
    await expect(revokeFeed(7)).resolves.toBeUndefined()
    expect(seen[0]!.method).toBe('DELETE')
    expect(new URL(seen[0]!.url).pathname).toBe('/api/v1/feeds/7/')
    expect(seen[0]!.headers.get('X-CSRFToken')).toBe('feedcsrf')
  })

  it('turns a refusal into an ApiError with the field errors', async () => {
    const body = { message: 'Pick the pool to follow.', code: 'required', extra: { fields: { pool: ['Pick the pool to follow.'] } } }
    fetchMock.mockResolvedValue(json(body, 400))
    const error = await createFeed({ kind: 'pool' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ApiError)
    expect(error).toMatchObject({ status: 400, code: 'required' })
    expect((error as ApiError).fields).toEqual({ pool: ['Pick the pool to follow.'] })
  })
})

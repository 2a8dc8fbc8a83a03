import { describe, expect, it } from 'vitest'

import { ApiError, fetchAllPages, makeClient, readCookie, unwrap } from '../client'

describe('API client', () => {
  it('reads the CSRF cookie', () => {
    expect(readCookie('csrftoken', 'sessionid=abc; csrftoken=t%3D1; other=2')).toBe('t=1')
    expect(readCookie('csrftoken', 'sessionid=abc')).toBeNull()
  })

  it('echoes the CSRF cookie on unsafe requests only (Django CSRF)', async () => {
    document.cookie = 'csrftoken=tok123'
    const seen: Request[] = []
    const client = makeClient(async (input) => {
      seen.push(input as Request)
      return new Response('{}', { status: 200, headers: { 'Content-Type': 'application/json' } })
    })
    await client.GET('/api/v1/me/', { baseUrl: 'http://test' })
    await client.POST('/api/v1/auth/logout/', { baseUrl: 'http://test' })
    expect(seen[0]!.headers.get('X-CSRFToken')).toBeNull()
    expect(seen[1]!.headers.get('X-CSRFToken')).toBe('tok123')
  })

  it('turns the one error shape into an ApiError with fields and next free windows', async () => {
    const body = {
      message: 'The pool is full.',
      code: 'pool_full',
      extra: { fields: { end: ['Too late.'] }, next_free: [{ start: 'a', end: 'b' }] },
    }
    const response = new Response(JSON.stringify(body), { status: 409 })
    const error = await unwrap(Promise.resolve({ error: body, response })).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ApiError)
    expect(error).toMatchObject({ status: 409, code: 'pool_full', message: 'The pool is full.' })
    expect((error as ApiError).fields).toEqual({ end: ['Too late.'] })
    expect((error as ApiError).nextFree).toEqual([{ start: 'a', end: 'b' }])
  })

  it('follows pages until there is no next one', async () => {
    const pages = [
      { results: [1, 2], next: 'p2' },
      { results: [3], next: null },
    ]
    const seen: number[] = []
    const items = await fetchAllPages(async (page) => {
      seen.push(page)
      return pages[page - 1]!
    })
    expect(items).toEqual([1, 2, 3])
    expect(seen).toEqual([1, 2])
  })
})

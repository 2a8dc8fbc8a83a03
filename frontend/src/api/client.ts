import createClient, { type Middleware } from 'openapi-fetch'

import { i18n, toApiLanguage } from '@/i18n'

import type { paths } from './schema'
import type { ApiErrorBody, Window } from './types'

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

export function readCookie(name: string, cookies: string = document.cookie): string | null {
  for (const part of cookies.split(';')) {
    const [key, ...rest] = part.trim().split('=')
    if (key === name) return decodeURIComponent(rest.join('='))
  }
  return null
}

/** Django's CSRF protection: echo the `csrftoken` cookie in a header on every unsafe request. */
export const csrfMiddleware: Middleware = {
  onRequest({ request }) {
    if (UNSAFE.has(request.method)) {
      const token = readCookie('csrftoken')
      if (token) request.headers.set('X-CSRFToken', token)
    }
    return request
  },
}

/** The server answers in the language this page shows (its errors, field errors, reasons and
 *  findings), which may differ from the profile's (docs/api.md, X-LabGPU-Language). */
export const languageMiddleware: Middleware = {
  onRequest({ request }) {
    request.headers.set('X-LabGPU-Language', toApiLanguage(i18n.global.locale.value))
    return request
  },
}

type Listener = () => void
const unauthenticatedListeners = new Set<Listener>()

/** Called when the API says the session is gone, so the app can send the user to the login page. */
export function onUnauthenticated(listener: Listener): () => void {
  unauthenticatedListeners.add(listener)
  return () => unauthenticatedListeners.delete(listener)
}

const sessionMiddleware: Middleware = {
  async onResponse({ request, response }) {
    if ((response.status === 401 || response.status === 403) && !request.url.includes('/auth/')) {
      const body = (await response.clone().json().catch(() => null)) as Partial<ApiErrorBody> | null
      if (body?.code === 'not_authenticated') unauthenticatedListeners.forEach((l) => l())
    }
    return response
  },
}

export function makeClient(fetchImpl?: typeof fetch) {
  const client = createClient<paths>({
    baseUrl: '',
    credentials: 'same-origin',
    ...(fetchImpl ? { fetch: fetchImpl } : {}),
  })
  client.use(csrfMiddleware, languageMiddleware, sessionMiddleware)
  return client
}

/** The request never got an answer (offline, DNS, connection refused): not a bug of the page. */
export class NetworkError extends Error {
  constructor(cause: unknown) {
    super('network error', { cause })
    this.name = 'NetworkError'
  }
}

/** `fetch`, with a failure to reach the server told apart from an error in the page's own code. */
export async function fetchOrNetworkError(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(input, init)
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') throw e
    throw new NetworkError(e)
  }
}

/** The one typed client the SPA talks to the API through. */
export const api = makeClient(fetchOrNetworkError)

/** An API failure in the shape every endpoint uses: `{message, code, extra: {fields, next_free}}`. */
export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly fields: Record<string, string[]>
  readonly nextFree: Window[]
  /** The figures a refusal carries (docs/api.md's error table: quota left, limits…). */
  readonly extra: Record<string, unknown>

  constructor(status: number, body: Partial<ApiErrorBody> | null | undefined) {
    super(body?.message || `HTTP ${status}`)
    this.name = 'ApiError'
    this.status = status
    this.code = body?.code ?? 'error'
    const extra = body?.extra
    this.fields = (extra?.fields as Record<string, string[]> | undefined) ?? {}
    this.nextFree = (extra?.next_free as Window[] | undefined) ?? []
    this.extra = (extra as Record<string, unknown> | undefined) ?? {}
  }
}

interface FetchResult<T> {
  data?: T
  error?: unknown
  response: Response
}

/** The largest page the API serves (backend PageNumberPagination.max_page_size). */
export const MAX_PAGE_SIZE = 500

/** Every item of a paginated list, fetching page after page (lists here are small). */
export async function fetchAllPages<T>(
  fetchPage: (page: number) => Promise<{ results: T[]; next?: string | null }>,
  maxPages = 50,
): Promise<T[]> {
  const items: T[] = []
  for (let page = 1; page <= maxPages; page++) {
    const data = await fetchPage(page)
    items.push(...data.results)
    if (!data.next) break
  }
  return items
}

/** Return the data of an openapi-fetch result, or throw an ApiError carrying the error body. */
export async function unwrap<T>(pending: Promise<FetchResult<T>>): Promise<T> {
  const { data, error, response } = await pending
  if (!response.ok) throw new ApiError(response.status, error as Partial<ApiErrorBody> | null)
  return data as T
}

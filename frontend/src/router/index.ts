import { START_LOCATION, createRouter, createWebHistory, type RouteLocationNormalized } from 'vue-router'

import { hasStoredLocale, i18n, matchLocale, setLocale } from '@/i18n'
import { pageSaysSignedOut, useSessionStore } from '@/stores/session'
import { afterNextPaint } from '@/utils/afterPaint'
import { routes } from './routes'

export const router = createRouter({
  history: createWebHistory(import.meta.env.BASE_URL),
  routes,
  // The first page opens at the top by itself (the router turns the browser's restoration off);
  // a scroll there would force a layout in the middle of the first render.
  scrollBehavior: (_to, from) => (from === START_LOCATION ? false : { top: 0 }),
})

/** Decide whether the session may open `to`; returns a redirect or true. */
export function guard(to: RouteLocationNormalized, session: ReturnType<typeof useSessionStore>) {
  if (to.meta.public) {
    if (to.name === 'login' && session.isAuthenticated) return { name: 'dashboard' }
    return true
  }
  if (!session.isAuthenticated) {
    return { name: 'login', query: to.fullPath === '/' ? {} : { next: to.fullPath } }
  }
  const role = to.meta.role
  // The dashboard says which page was refused and who may open it (never a silent redirect).
  const refused = { name: 'dashboard', query: { refused: String(to.name ?? '') } }
  if (role === 'site_admin' && !session.isSiteAdmin) return refused
  if (role === 'lab_admin' && !session.isLabAdmin) return refused
  if (role === 'admin' && !session.isLabAdmin && !session.isSiteAdmin) return refused
  return true
}

/**
 * The first page load: fetch the page's code and its first reads now, while `/me/` is on its way
 * and before the app mounts (main.ts calls this first). Returns when the page's reads that need no
 * session have answered (or failed), so the first render can draw the page with its data.
 */
export function prefetchFirstPage(): Promise<unknown> {
  const to = router.resolve(router.options.history.location)
  // vue-router calls the same loader again when it navigates and gets the module already on its way.
  for (const record of to.matched) {
    const view = record.components?.default
    if (typeof view === 'function' && view.length === 0) void (view as () => Promise<unknown>)().catch(() => {})
  }
  // A signed-out visitor's 401 is dropped: the guard sends them to sign in.
  if (pageSaysSignedOut()) return Promise.resolve()
  return Promise.resolve(to.meta.prefetch?.()).catch(() => undefined)
}

router.beforeEach(async (to) => {
  const session = useSessionStore()
  if (!session.loaded) {
    await session.load()
    const verdict = guard(to, session)
    // The first page's reads that need the session (its labs, its time zone), now that it is here.
    if (verdict === true && session.isAuthenticated) to.meta.prefetchWithSession?.(session)
    // The profile's language applies unless this browser has chosen one.
    const preferred = matchLocale(session.me?.language)
    if (preferred && !hasStoredLocale()) await setLocale(preferred, false)
    return verdict
  }
  return guard(to, session)
})

export function updateTitle(route: RouteLocationNormalized = router.currentRoute.value): void {
  const key = route.meta.title
  const app = i18n.global.t('app.name')
  document.title = key ? `${i18n.global.t(key)} · ${app}` : app
}

// After the page's first paint: the tab's title is not what the person waits for.
router.afterEach(() => afterNextPaint(() => updateTitle()))

import { createApp } from 'vue'
import { createPinia } from 'pinia'

import App from './App.vue'
import { onUnauthenticated } from './api/client'
import { saveDrafts } from './composables/useDraft'
import { detectLocale, i18n, setLocale } from './i18n'
import { prefetchFirstPage, router } from './router'
import { useSessionStore } from './stores/session'
import './assets/main.css'

// Before anything else runs: the first page's code and reads travel while the app sets up and mounts.
const firstReads = prefetchFirstPage()

const app = createApp(App)
const pinia = createPinia()
app.use(pinia)
app.use(i18n)
app.use(router)

// The language's messages first (English is here; Chinese is fetched), so the first render is in it.
const language = setLocale(detectLocale(), false)

onUnauthenticated(() => {
  const session = useSessionStore(pinia)
  const wasLoaded = session.loaded
  session.forget()
  // On the first load the route guard sends the visitor to the login page with the link they
  // opened; redirecting from here too would race it with the not-yet-resolved route (`/`).
  if (!wasLoaded) return
  const current = router.currentRoute.value
  if (current.meta.public) return
  // Say why they are asked to sign in, keep what they typed, and bring them back to this page.
  const kept = saveDrafts()
  void router.push({ name: 'login', query: { next: current.fullPath, expired: kept ? 'draft' : '1' } })
})

// One render of the whole first page: mounted once the first navigation has its session and its
// page's code, and the page's first reads have answered, instead of a bare shell drawn, laid out
// and patched, then the page, then its data (at 4× CPU slowdown that was ≈130 ms more before the
// dashboard's bookings showed: docs/benchmarks.md). The reads travel while the scripts compile, so
// on a slow CPU they are in before the thread is free. On a slow network the reads are waited for
// at most FIRST_READS_WAIT_MS and the page's code at most FIRST_RENDER_WAIT_MS: then the shell
// shows and the page follows. A navigation that fails still mounts (the router shows the error).
const FIRST_READS_WAIT_MS = 300
const FIRST_RENDER_WAIT_MS = 1000
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const pageReady = Promise.all([router.isReady().catch(() => undefined), Promise.race([firstReads, delay(FIRST_READS_WAIT_MS)])])
void Promise.all([language, Promise.race([pageReady, delay(FIRST_RENDER_WAIT_MS)])]).then(() => app.mount('#app'))

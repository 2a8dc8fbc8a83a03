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
prefetchFirstPage()

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

void language.then(() => app.mount('#app'))

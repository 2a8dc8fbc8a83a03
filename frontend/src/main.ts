import { createApp } from 'vue'
import { createPinia } from 'pinia'

import App from './App.vue'
import { onUnauthenticated } from './api/client'
import { i18n, setLocale } from './i18n'
import { router } from './router'
import { useSessionStore } from './stores/session'
import './assets/main.css'

const app = createApp(App)
const pinia = createPinia()
app.use(pinia)
app.use(i18n)
app.use(router)

setLocale(i18n.global.locale.value, false)

onUnauthenticated(() => {
  const session = useSessionStore(pinia)
  const wasLoaded = session.loaded
  session.forget()
  // On the first load the route guard sends the visitor to the login page with the link they
  // opened; redirecting from here too would race it with the not-yet-resolved route (`/`).
  if (!wasLoaded) return
  const current = router.currentRoute.value
  if (!current.meta.public) void router.push({ name: 'login', query: { next: current.fullPath } })
})

app.mount('#app')

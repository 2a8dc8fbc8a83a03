import { mount, type ComponentMountingOptions } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { createI18n } from 'vue-i18n'
import { createMemoryHistory, createRouter } from 'vue-router'
import type { Component } from 'vue'

import { PLURAL_RULES } from '@/i18n'
import en from '@/i18n/en.json'
import zhCN from '@/i18n/zh-CN.json'
import type { Me } from '@/api/types'
import { useSessionStore } from '@/stores/session'

export const alice: Me = {
  id: 3,
  username: 'alice',
  email: 'alice@example.org',
  first_name: 'Alice',
  last_name: '',
  timezone: 'Asia/Shanghai',
  language: 'en',
  is_site_admin: false,
  memberships: [{ id: 1, lab: { id: 1, name: 'Vision Lab', slug: 'vision' }, role: 'member' }],
  email_verified: true,
  pending_email: '',
}

/** Mount with the app's plugins: real messages, a memory router, a fresh Pinia and a signed-in user. */
export function mountWithApp<C extends Component>(
  component: C,
  options: ComponentMountingOptions<C> & { me?: Me | null; locale?: 'en' | 'zh-CN' } = {},
) {
  const pinia = createPinia()
  setActivePinia(pinia)
  const session = useSessionStore()
  if (options.me !== null) session.setMe(options.me ?? alice)
  const i18n = createI18n({ legacy: false, locale: options.locale ?? 'en', fallbackLocale: 'en', messages: { en, 'zh-CN': zhCN }, pluralRules: PLURAL_RULES })
  const router = createRouter({
    history: createMemoryHistory(),
    routes: [{ path: '/:p(.*)*', name: 'any', component: { template: '<div />' } }],
  })
  const { global, ...rest } = options
  return mount(component, {
    ...rest,
    global: { ...global, plugins: [pinia, i18n, router, ...(global?.plugins ?? [])] },
  } as ComponentMountingOptions<C>)
}

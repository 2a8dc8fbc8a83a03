import { flushPromises } from '@vue/test-utils'
import { afterEach, describe, expect, it, vi } from 'vitest'

import { mountWithApp } from '@/__tests__/helpers'

const api = vi.hoisted(() => ({
  fetchAuthProviders: vi.fn(),
  login: vi.fn(),
  logout: vi.fn(),
  fetchMe: vi.fn(),
  ensureCsrfCookie: vi.fn(),
}))
vi.mock('@/api/auth', () => api)

const { default: LoginView } = await import('../LoginView.vue')
const sso = { id: 'oidc', name: 'Uni SSO', login_url: '/oidc/login/' }

async function mountAt(path: string, locale: 'en' | 'zh-CN' = 'en') {
  const wrapper = mountWithApp(LoginView, { me: null, locale })
  await wrapper.vm.$router.push(path)
  await flushPromises()
  return wrapper
}

describe('LoginView', () => {
  afterEach(() => {
    vi.clearAllMocks()
  })

  it('offers the configured SSO provider, keeping the deep link, beside the password form', async () => {
    api.fetchAuthProviders.mockResolvedValue({ password_login: true, providers: [sso] })
    const wrapper = await mountAt('/login?next=/bookings/42')
    const button = wrapper.get('[data-testid=sso-oidc]')
    expect(button.text()).toBe('Sign in with Uni SSO')
    expect(button.attributes('href')).toBe('/oidc/login/?next=%2Fbookings%2F42')
    expect(wrapper.find('[data-testid=login-form]').exists()).toBe(true)
  })

  it('hides the password form when password sign-in is off, in Chinese too', async () => {
    api.fetchAuthProviders.mockResolvedValue({ password_login: false, providers: [sso] })
    const wrapper = await mountAt('/login', 'zh-CN')
    expect(wrapper.get('[data-testid=sso-oidc]').text()).toBe('通过Uni SSO登录')
    expect(wrapper.find('[data-testid=login-form]').exists()).toBe(false)
  })

  it('never sends the provider an off-site next, and says when SSO failed', async () => {
    api.fetchAuthProviders.mockResolvedValue({ password_login: true, providers: [sso] })
    const wrapper = await mountAt('/login?next=//evil.example/&sso_error=1')
    expect(wrapper.get('[data-testid=sso-oidc]').attributes('href')).toBe('/oidc/login/?next=%2F')
    expect(wrapper.get('[data-testid=sso-error]').text()).toContain('Single sign-on did not complete')
  })

  it('shows only the password form when no SSO is configured', async () => {
    api.fetchAuthProviders.mockResolvedValue({ password_login: true, providers: [] })
    const wrapper = await mountAt('/login')
    expect(wrapper.find('[data-testid=sso-providers]').exists()).toBe(false)
    expect(wrapper.find('[data-testid=login-form]').exists()).toBe(true)
  })
})

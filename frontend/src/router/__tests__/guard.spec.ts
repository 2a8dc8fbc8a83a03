import { createPinia, setActivePinia } from 'pinia'
import { beforeEach, describe, expect, it } from 'vitest'
import type { RouteLocationNormalized } from 'vue-router'

import { alice } from '@/__tests__/helpers'
import type { Me } from '@/api/types'
import { useSessionStore } from '@/stores/session'
import { guard } from '../index'
import { routes } from '../routes'

function to(name: string, fullPath = '/'): RouteLocationNormalized {
  const record = routes.find((r) => r.name === name)!
  return { name, fullPath, meta: record.meta ?? {} } as unknown as RouteLocationNormalized
}

function signedIn(me: Me | null) {
  const session = useSessionStore()
  if (me) session.setMe(me)
  return session
}

describe('route guard (I-6: people see only what their role allows)', () => {
  beforeEach(() => setActivePinia(createPinia()))

  it('sends anonymous visitors to the login page and back afterwards', () => {
    expect(guard(to('bookings', '/bookings?status=ready'), signedIn(null))).toEqual({
      name: 'login',
      query: { next: '/bookings?status=ready' },
    })
    expect(guard(to('login'), signedIn(null))).toBe(true)
    expect(guard(to('feeds', '/feeds'), signedIn(null))).toEqual({ name: 'login', query: { next: '/feeds' } })
  })

  it('keeps members out of admin pages', () => {
    const session = signedIn(alice)
    expect(guard(to('approvals'), session)).toEqual({ name: 'dashboard', query: { refused: 'approvals' } })
    expect(guard(to('nodes'), session)).toEqual({ name: 'dashboard', query: { refused: 'nodes' } })
    expect(guard(to('lab-members'), session)).toEqual({ name: 'dashboard', query: { refused: 'lab-members' } })
    expect(guard(to('calendar'), session)).toBe(true)
    expect(guard(to('feeds'), session)).toBe(true)
  })

  it('lets a lab admin approve and manage members, and a site admin see nodes', () => {
    const bob: Me = { ...alice, username: 'bob', memberships: [{ ...alice.memberships[0]!, role: 'lab_admin' }] }
    expect(guard(to('approvals'), signedIn(bob))).toBe(true)
    expect(guard(to('lab-members'), signedIn(bob))).toBe(true)
    expect(guard(to('nodes'), signedIn(bob))).toEqual({ name: 'dashboard', query: { refused: 'nodes' } })

    setActivePinia(createPinia())
    const carol: Me = { ...alice, username: 'carol', is_site_admin: true, memberships: [] }
    expect(guard(to('nodes'), signedIn(carol))).toBe(true)
    expect(guard(to('approvals'), signedIn(carol))).toBe(true)
    // Site admins manage every lab's members (the API lets them).
    expect(guard(to('lab-members', '/labs'), signedIn(carol))).toBe(true)
  })

  it('sends a signed-in user away from the login page', () => {
    expect(guard(to('login'), signedIn(alice))).toEqual({ name: 'dashboard' })
  })
})

import { flushPromises } from '@vue/test-utils'
import { describe, expect, it } from 'vitest'
import type { Router } from 'vue-router'

import { mountWithApp } from '@/__tests__/helpers'
import BookingTable from '@/components/bookings/BookingTable.vue'
import type { BookingRow } from '@/api/types'

const booking = {
  id: 13,
  pool: 2,
  pool_name: 'MI350X ×1 · atl1',
  lab: { id: 1, name: 'Vision Lab', slug: 'vision' },
  start: '2026-11-16T13:00:00Z',
  end: '2026-11-16T20:00:00Z',
  purpose: 'SDXL fine-tune',
  status: 'scheduled',
} as unknown as BookingRow

function table() {
  const wrapper = mountWithApp(BookingTable, { props: { bookings: [booking] } })
  const router = (wrapper.vm as unknown as { $router: Router }).$router
  return { wrapper, router, link: wrapper.get('[data-booking-id="13"] .open a') }
}

describe('a booking row link (BasePlainLink)', () => {
  it('is a real link to the booking, for a new tab or a copied address', () => {
    expect(table().link.attributes('href')).toBe('/bookings/13')
  })

  it('opens the booking in the app on a plain click', async () => {
    const { router, link } = table()
    const click = new MouseEvent('click', { bubbles: true, cancelable: true, button: 0 })
    link.element.dispatchEvent(click)
    await flushPromises()
    expect(click.defaultPrevented).toBe(true)
    expect(router.currentRoute.value.fullPath).toBe('/bookings/13')
  })

  it('leaves a modified or middle click to the browser', async () => {
    const { router, link } = table()
    for (const init of [{ ctrlKey: true }, { metaKey: true }, { shiftKey: true }, { button: 1 }]) {
      const click = new MouseEvent('click', { bubbles: true, cancelable: true, button: 0, ...init })
      link.element.dispatchEvent(click)
      await flushPromises()
      expect(click.defaultPrevented, JSON.stringify(init)).toBe(false)
    }
    expect(router.currentRoute.value.fullPath).not.toBe('/bookings/13')
  })
})

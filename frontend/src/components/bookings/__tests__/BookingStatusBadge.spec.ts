import { describe, expect, it } from 'vitest'

import { mountWithApp } from '@/__tests__/helpers'
import BookingStatusBadge from '../BookingStatusBadge.vue'
import BookingStatusTimeline from '../BookingStatusTimeline.vue'

describe('BookingStatusBadge', () => {
  it('names the status in the UI language', () => {
    expect(mountWithApp(BookingStatusBadge, { props: { status: 'pending' } }).text()).toBe('Awaiting approval')
    expect(mountWithApp(BookingStatusBadge, { props: { status: 'pending' }, locale: 'zh-CN' }).text()).toBe('待审批')
  })
})

describe('BookingStatusTimeline', () => {
  it('marks the current step for assistive technology', () => {
    const wrapper = mountWithApp(BookingStatusTimeline, { props: { status: 'ready', requiresApproval: false } })
    const current = wrapper.find('[aria-current="step"]')
    expect(current.attributes('data-status')).toBe('ready')
    expect(wrapper.findAll('li')).toHaveLength(5)
  })
})

import { describe, expect, it } from 'vitest'

import type { Quota } from '@/api/types'
import { mountWithApp } from '@/__tests__/helpers'
import QuotaBar from '../QuotaBar.vue'

const quota: Quota = {
  id: 1,
  lab: { id: 1, name: 'Vision Lab', slug: 'vision' },
  instance_type: 1,
  instance_type_name: 'AMD MI300X ×1',
  month: '2026-11-01',
  gpu_hours: '400.00',
  used_gpu_hours: '100.00',
  committed_gpu_hours: '50.00',
  remaining_gpu_hours: '250.00',
}

describe('QuotaBar', () => {
  it('fills used and booked shares and says what is left', () => {
    const wrapper = mountWithApp(QuotaBar, { props: { quota, label: 'Vision Lab · AMD MI300X ×1' } })
    expect(wrapper.find('.used').attributes('style')).toContain('width: 25%')
    expect(wrapper.find('.committed').attributes('style')).toContain('width: 12.5%')
    expect(wrapper.get('[data-testid=quota-remaining]').text()).toBe('250 of 400 GPU-hours left')
    expect(wrapper.get('[role=meter]').attributes('aria-valuenow')).toBe('150')
  })
})

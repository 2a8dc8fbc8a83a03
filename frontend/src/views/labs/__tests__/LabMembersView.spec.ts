import { flushPromises } from '@vue/test-utils'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

import type { Me, Member } from '@/api/types'
import { alice, mountWithApp } from '@/__tests__/helpers'

const vision = { id: 1, name: 'Vision Lab', slug: 'vision' }
const bob: Me = { ...alice, id: 4, username: 'bob', memberships: [{ id: 2, lab: vision, role: 'lab_admin' }] }
const member = {
  id: 1,
  user: { id: 3, username: 'alice', first_name: 'Alice', last_name: '' },
  role: 'member',
  max_hours_per_week: null,
  max_concurrent_bookings: null,
} as unknown as Member

const api = vi.hoisted(() => ({
  listLabs: vi.fn(),
  listMembers: vi.fn(),
  addMember: vi.fn(),
  updateMember: vi.fn(),
  removeMember: vi.fn(),
}))
vi.mock('@/api/labs', () => api)

const { default: LabMembersView } = await import('../LabMembersView.vue')

async function mountView(me: Me, locale: 'en' | 'zh-CN' = 'en') {
  const wrapper = mountWithApp(LabMembersView, { me, locale })
  await flushPromises()
  return wrapper
}

describe('LabMembersView', () => {
  beforeEach(() => {
    api.listMembers.mockResolvedValue([member])
    api.listLabs.mockResolvedValue([{ ...vision, my_role: null, created_at: '2026-01-01T00:00:00Z' }])
  })
  afterEach(() => {
    vi.clearAllMocks()
  })

  it('offers a lab admin no add-member form, which the server would refuse, and says who adds', async () => {
    const wrapper = await mountView(bob)
    expect(wrapper.find('[data-testid=member-add]').exists()).toBe(false)
    expect(wrapper.find('#member-username').exists()).toBe(false)
    expect(wrapper.get('[data-testid=member-add-help]').text()).toBe(
      'New members are added by a site admin; ask one to add them to your lab.',
    )
    // The members they have stay editable.
    expect(wrapper.findAll('[data-testid=lab-members] tbody tr')).toHaveLength(1)
    expect(wrapper.text()).toContain('Remove')
  })

  it('says the same in Chinese', async () => {
    const wrapper = await mountView(bob, 'zh-CN')
    expect(wrapper.get('[data-testid=member-add-help]').text()).toBe(
      '新成员由站点管理员添加；请联系站点管理员将其加入课题组。',
    )
  })

  it('lets a site admin who administers the lab add a member', async () => {
    api.addMember.mockResolvedValue({ ...member, id: 9 })
    const wrapper = await mountView({ ...bob, is_site_admin: true })
    expect(wrapper.find('[data-testid=member-add-help]').exists()).toBe(false)
    await wrapper.get('#member-username').setValue(' frank ')
    await wrapper.get('[data-testid=member-add] form').trigger('submit')
    await flushPromises()
    expect(api.addMember).toHaveBeenCalledWith(1, { username: 'frank', role: 'member' })
  })

  it('sends the max hours a lab admin typed as a number (a number input yields one)', async () => {
    api.updateMember.mockResolvedValue({ ...member, max_hours_per_week: 12 })
    const wrapper = await mountView(bob)
    await wrapper.get('[aria-label="Max hours per week for alice"]').setValue('12')
    await wrapper.get('[data-testid=lab-members] tbody tr .btn-primary').trigger('click')
    await flushPromises()
    expect(api.updateMember).toHaveBeenCalledWith(1, 1, {
      role: 'member',
      max_hours_per_week: 12,
      max_concurrent_bookings: null,
    })
    expect(wrapper.find('[role=alert]').exists()).toBe(false)
  })

  it('shows a site admin who belongs to no lab the members of every lab', async () => {
    const carol: Me = { ...alice, id: 1, username: 'carol', is_site_admin: true, memberships: [] }
    const wrapper = await mountView(carol)
    expect(api.listMembers).toHaveBeenCalledWith(1)
    expect(wrapper.findAll('[data-testid=lab-members] tbody tr')).toHaveLength(1)
    expect(wrapper.find('[data-testid=member-add]').exists()).toBe(true)
  })
})

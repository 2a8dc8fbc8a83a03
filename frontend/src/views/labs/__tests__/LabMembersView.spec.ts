import { flushPromises } from '@vue/test-utils'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

import type { Me, Member } from '@/api/types'
import { alice, mountWithApp } from '@/__tests__/helpers'
import { useConfirmStore } from '@/stores/confirm'

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
const invitations = vi.hoisted(() => ({
  listInvitations: vi.fn(),
  createInvitation: vi.fn(),
  revokeInvitation: vi.fn(),
}))
vi.mock('@/api/invitations', () => invitations)

const { default: LabMembersView } = await import('../LabMembersView.vue')

async function mountView(me: Me, locale: 'en' | 'zh-CN' = 'en') {
  const wrapper = mountWithApp(LabMembersView, { me, locale })
  await flushPromises()
  return wrapper
}

describe('LabMembersView', () => {
  beforeEach(() => {
    api.listMembers.mockResolvedValue([member])
    invitations.listInvitations.mockResolvedValue([])
    api.listLabs.mockResolvedValue([{ ...vision, my_role: null, created_at: '2026-01-01T00:00:00Z' }])
  })
  afterEach(() => {
    vi.clearAllMocks()
    vi.unstubAllGlobals()
  })

  it('offers a lab admin no add-member form, which the server would refuse, but invitations', async () => {
    const wrapper = await mountView(bob)
    expect(wrapper.find('[data-testid=member-add]').exists()).toBe(false)
    expect(wrapper.find('#member-username').exists()).toBe(false)
    expect(wrapper.get('[data-testid=member-add-help]').text()).toBe(
      'Invite new members by e-mail below; they join when they accept. Site admins can also add people directly.',
    )
    expect(wrapper.find('[data-testid=invite-form]').exists()).toBe(true)
    // The members they have stay editable.
    expect(wrapper.findAll('[data-testid=lab-members] tbody tr')).toHaveLength(1)
    expect(wrapper.text()).toContain('Remove')
  })

  it('says the same in Chinese', async () => {
    const wrapper = await mountView(bob, 'zh-CN')
    expect(wrapper.get('[data-testid=member-add-help]').text()).toBe(
      '请在下方通过电子邮件邀请新成员；对方接受后即加入。站点管理员也可直接添加。',
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

  it('lets a lab admin invite by e-mail, shows the link once and lists the invitation to revoke', async () => {
    const pending = {
      id: 7,
      email: 'erin@uni.example',
      role: 'member',
      status: 'pending',
      invited_by: { id: 4, username: 'bob', first_name: '', last_name: '' },
      expires_at: '2026-12-07T10:00:00Z',
      accepted_at: null,
      revoked_at: null,
      created_at: '2026-11-30T10:00:00Z',
    }
    invitations.createInvitation.mockResolvedValue({ ...pending, link: 'https://x/invite/lgi_1_abc' })
    const wrapper = await mountView(bob)
    invitations.listInvitations.mockResolvedValue([pending])
    await wrapper.get('#invite-email').setValue(' erin@uni.example ')
    await wrapper.get('[data-testid=invite-form]').trigger('submit')
    await flushPromises()
    expect(invitations.createInvitation).toHaveBeenCalledWith(1, { email: 'erin@uni.example', role: 'member' })
    expect(wrapper.get('[data-testid=invite-link]').text()).toContain('https://x/invite/lgi_1_abc')
    expect(wrapper.get('[data-testid=invitations-table]').text()).toContain('erin@uni.example')
    invitations.revokeInvitation.mockResolvedValue(undefined)
    await wrapper.get('[aria-label="Revoke the invitation for erin@uni.example"]').trigger('click')
    // Asked in the app's own dialog, not window.confirm.
    expect(useConfirmStore().pending?.message).toBe('Revoke the invitation for erin@uni.example?')
    useConfirmStore().answer(true)
    await flushPromises()
    expect(invitations.revokeInvitation).toHaveBeenCalledWith(1, 7)
  })
})

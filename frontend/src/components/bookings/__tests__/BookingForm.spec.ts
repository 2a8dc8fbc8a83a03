import { flushPromises } from '@vue/test-utils'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

import { ApiError } from '@/api/client'
import type { Availability, Budget, InstanceType, Pool, Quota } from '@/api/types'
import { mountWithApp } from '@/__tests__/helpers'
import { resetCatalog } from '@/composables/useCatalog'

const instanceType: InstanceType = {
  id: 4,
  name: 'AMD MI350X ×1',
  slug: 'mi350x-1',
  provider_account: 1,
  provider_size: 'gpu-mi350x1-288gb',
  gpu_vendor: 'amd',
  gpu_model: 'MI350X',
  gpu_count: 1,
  vram_gb_per_gpu: 288,
  gpu_arch: 'gfx950',
  price_per_hour: '2.49',
  baselines: {},
}
const pool: Pool = {
  id: 2,
  name: 'MI350X ×1 · atl1',
  slug: 'mi350x-atl1',
  instance_type: 4,
  instance_type_detail: instanceType,
  region: 'atl1',
  capacity: 2,
  granularity_minutes: 30,
  requires_approval: true,
}
const quota: Quota = {
  id: 9,
  lab: { id: 1, name: 'Vision Lab', slug: 'vision' },
  instance_type: 4,
  instance_type_name: 'AMD MI350X ×1',
  month: '2026-12-01',
  gpu_hours: '400.00',
  used_gpu_hours: '0.00',
  committed_gpu_hours: '10.00',
  remaining_gpu_hours: '390.00',
}
const availability: Availability = {
  pool: 2,
  capacity: 2,
  duration_minutes: 240,
  intervals: [{ start: '2026-12-01T01:00:00Z', end: '2026-12-01T05:00:00Z', used: 1, free: 1, blackout: false }],
  next_free: [],
}

const api = vi.hoisted(() => ({
  createBooking: vi.fn(),
  poolAvailability: vi.fn(),
  poolFreeWindows: vi.fn(),
  listQuotas: vi.fn(),
  listPoolReadyTimes: vi.fn(async () => [{ pool: 2, median_seconds: 40, max_seconds: 95, samples: 7 }]),
  listBudgets: vi.fn(async (): Promise<Budget[]> => []),
  listCostCentres: vi.fn(async () => []),
  joinWaitlist: vi.fn(),
}))
vi.mock('@/api/waitlist', () => ({ joinWaitlist: api.joinWaitlist }))
vi.mock('@/api/budgets', () => ({ listBudgets: api.listBudgets, listCostCentres: api.listCostCentres }))
vi.mock('@/api/bookings', () => ({ createBooking: api.createBooking }))
vi.mock('@/api/quotas', () => ({ listQuotas: api.listQuotas }))
vi.mock('@/api/catalog', () => ({
  poolAvailability: api.poolAvailability,
  poolFreeWindows: api.poolFreeWindows,
  listPoolReadyTimes: api.listPoolReadyTimes,
  listPools: async () => [pool],
  listInstanceTypes: async () => [instanceType],
  listLabs: async () => [],
}))

const { default: BookingForm } = await import('../BookingForm.vue')

async function mountForm(stubs: Record<string, boolean> = {}) {
  const wrapper = mountWithApp(BookingForm, {
    props: { pool: 2, start: '2026-12-01T01:00:00Z', end: '2026-12-01T05:00:00Z' },
    global: { stubs },
  })
  await flushPromises()
  await vi.advanceTimersByTimeAsync(400)
  await flushPromises()
  return wrapper
}

describe('BookingForm', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    resetCatalog()
    api.poolAvailability.mockResolvedValue(availability)
    api.listQuotas.mockResolvedValue([quota])
  })
  afterEach(() => {
    vi.useRealTimers()
    vi.clearAllMocks()
  })

  it('prefills the window in the user’s time zone', async () => {
    const wrapper = await mountForm()
    expect((wrapper.get('#booking-start').element as HTMLInputElement).value).toBe('2026-12-01T09:00')
    expect((wrapper.get('#booking-end').element as HTMLInputElement).value).toBe('2026-12-01T13:00')
  })

  it('shows availability, cost and quota left as you type', async () => {
    const wrapper = await mountForm()
    expect(api.poolAvailability).toHaveBeenCalledWith(2, {
      start: '2026-12-01T01:00:00.000Z',
      end: '2026-12-01T05:00:00.000Z',
      duration_minutes: 240,
    })
    expect(api.listQuotas).toHaveBeenCalledWith({ lab: 1, month: '2026-12-01' })
    expect(wrapper.get('[data-testid=availability]').text()).toBe('1 of 2 nodes free')
    expect(wrapper.get('[data-testid=estimate-gpu-hours]').text()).toBe('4')
    expect(wrapper.get('[data-testid=estimate-cost]').text()).toBe('$9.96')
    expect(wrapper.get('[data-testid=quota-left]').text()).toContain('390 GPU-hours')

    await wrapper.get('#booking-end').setValue('2026-12-01T15:00')
    await flushPromises()
    expect(wrapper.get('[data-testid=estimate-cost]').text()).toBe('$14.94')
  })

  it('reads the quota of the UTC month the server charges, not the month on the user’s clock', async () => {
    // 20:00–23:00 UTC on Nov 30 is Dec 1 04:00–07:00 in Shanghai: November's quota pays for it.
    const november = { ...quota, id: 8, month: '2026-11-01', remaining_gpu_hours: '2.00' }
    api.listQuotas.mockImplementation(async ({ month }: { month: string }) => (month === '2026-11-01' ? [november] : [quota]))
    const wrapper = mountWithApp(BookingForm, {
      props: { pool: 2, start: '2026-11-30T20:00:00Z', end: '2026-11-30T23:00:00Z' },
    })
    await flushPromises()
    expect(api.listQuotas).toHaveBeenCalledWith({ lab: 1, month: '2026-11-01' })
    expect(api.listQuotas).not.toHaveBeenCalledWith({ lab: 1, month: '2026-12-01' })
    const left = wrapper.get('[data-testid=quota-left]').text()
    expect(left).toContain('2 GPU-hours')
    expect(left).toContain('more than your lab has left')
  })

  it('judges a booking over a month end by each month’s share, as the server does', async () => {
    // 22:00 Nov 30 – 02:00 Dec 1 UTC: 2 GPU-hours in each month.
    const november = { ...quota, id: 8, month: '2026-11-01', remaining_gpu_hours: '3.00' }
    const december = { ...quota, remaining_gpu_hours: '1.00' }
    api.listQuotas.mockImplementation(async ({ month }: { month: string }) => (month === '2026-11-01' ? [november] : [december]))
    const wrapper = mountWithApp(BookingForm, {
      props: { pool: 2, start: '2026-11-30T22:00:00Z', end: '2026-12-01T02:00:00Z' },
    })
    await flushPromises()
    expect(api.listQuotas).toHaveBeenCalledWith({ lab: 1, month: '2026-11-01' })
    expect(api.listQuotas).toHaveBeenCalledWith({ lab: 1, month: '2026-12-01' })
    const months = wrapper.findAll('[data-testid=quota-left-month]')
    expect(months.map((m) => m.text())).toEqual([
      expect.stringContaining('2026-11: 3 GPU-hours'),
      expect.stringContaining('2026-12: 1 GPU-hours'),
    ])
    expect(months[0]!.text()).not.toContain('more than your lab has left')
    expect(months[1]!.text()).toContain('more than your lab has left')

    // Without a quota row in a month the server refuses the booking, so the form says so there.
    api.listQuotas.mockImplementation(async ({ month }: { month: string }) => (month === '2026-11-01' ? [november] : []))
    const noDecember = mountWithApp(BookingForm, {
      props: { pool: 2, start: '2026-11-30T22:00:00Z', end: '2026-12-01T02:00:00Z' },
    })
    await flushPromises()
    expect(noDecember.findAll('[data-testid=quota-left-month]').map((m) => m.text())).toEqual([
      expect.stringContaining('2026-11: 3 GPU-hours'),
      expect.stringContaining('2026-12: No quota set'),
    ])
  })

  it('sends the window as UTC instants and reports the created booking', async () => {
    api.createBooking.mockResolvedValue({ id: 42, status: 'pending' })
    const wrapper = await mountForm()
    await wrapper.get('#booking-purpose').setValue('ViT sweep')
    await wrapper.get('form').trigger('submit')
    await flushPromises()
    expect(api.createBooking).toHaveBeenCalledWith({
      pool: 2,
      start: '2026-12-01T01:00:00.000Z',
      end: '2026-12-01T05:00:00.000Z',
      purpose: 'ViT sweep',
      jupyter: false,
      lab: 1,
    })
    expect(wrapper.emitted('created')?.[0]).toEqual([{ id: 42, status: 'pending' }])
  })

  it('asks for JupyterLab when its box is ticked', async () => {
    api.createBooking.mockResolvedValue({ id: 43, status: 'scheduled' })
    const wrapper = await mountForm()
    await wrapper.get('[data-testid=booking-jupyter]').setValue(true)
    await wrapper.get('form').trigger('submit')
    await flushPromises()
    expect(api.createBooking).toHaveBeenCalledWith(expect.objectContaining({ jupyter: true }))
  })

  it('puts the API’s field errors beside their fields', async () => {
    api.createBooking.mockRejectedValue(
      new ApiError(400, { message: 'Invalid end', code: 'too_long', extra: { fields: { end: ['Too long for this pool.'] } } }),
    )
    const wrapper = await mountForm()
    await wrapper.get('form').trigger('submit')
    await flushPromises()
    const error = wrapper.get('[data-testid=field-error][data-field=booking-end]')
    expect(error.text()).toBe('Too long for this pool.')
    expect(wrapper.get('#booking-end').attributes('aria-invalid')).toBe('true')
    expect(wrapper.get('#booking-end').attributes('aria-describedby')).toContain('booking-end-error')
  })

  it('offers the next free windows on a conflict and moves the booking to the one picked', async () => {
    api.createBooking.mockRejectedValueOnce(
      new ApiError(409, {
        message: 'Pool full',
        code: 'pool_full',
        extra: { next_free: [{ start: '2026-12-01T06:00:00Z', end: '2026-12-01T20:00:00Z' }] },
      }),
    )
    const wrapper = await mountForm()
    await wrapper.get('form').trigger('submit')
    await flushPromises()
    expect(wrapper.get('[data-testid=form-error]').text()).toContain('The pool is full for that time')
    const options = wrapper.findAll('[data-testid=next-free-option]')
    expect(options).toHaveLength(1)
    await options[0]!.trigger('click')
    // Same 4-hour length, moved to the free window's start (14:00 in Shanghai).
    expect((wrapper.get('#booking-start').element as HTMLInputElement).value).toBe('2026-12-01T14:00')
    expect((wrapper.get('#booking-end').element as HTMLInputElement).value).toBe('2026-12-01T18:00')
    expect(wrapper.find('[data-testid=next-free-option]').exists()).toBe(false)
  })

  it('on a conflict, joins the waitlist for this pool or for any pool of its GPU model', async () => {
    const full = () =>
      new ApiError(409, { message: 'Pool full', code: 'pool_full', extra: { next_free: [{ start: '2026-12-01T06:00:00Z', end: '2026-12-01T20:00:00Z' }] } })
    api.createBooking.mockRejectedValueOnce(full())
    api.joinWaitlist.mockResolvedValueOnce({ id: 5, position: 2 })
    const wrapper = await mountForm({ RouterLink: true })
    await wrapper.get('form').trigger('submit')
    await flushPromises()
    const choice = wrapper.get('[data-testid=waitlist-for]')
    expect(choice.text()).toContain('this pool (MI350X ×1 · atl1)')
    expect(choice.text()).toContain('any MI350X pool my lab may book')
    expect((wrapper.get('[data-testid=waitlist-for-pool]').element as HTMLInputElement).checked).toBe(true)

    await wrapper.get('[data-testid=waitlist-for-model]').setValue(true)
    await wrapper.get('[data-testid=waitlist-join-submit]').trigger('click')
    await flushPromises()
    expect(api.joinWaitlist).toHaveBeenCalledWith(
      expect.objectContaining({
        pool: null,
        gpu_model: 'MI350X',
        earliest_start: '2026-12-01T01:00:00.000Z',
        latest_end: '2026-12-01T05:00:00.000Z',
        duration_minutes: 240,
      }),
    )
    expect(wrapper.get('[data-testid=waitlist-joined]').text()).toContain('#2 in line')
  })

  it('joins the waitlist of the pool itself unless a GPU model is chosen', async () => {
    api.createBooking.mockRejectedValueOnce(
      new ApiError(409, { message: 'Pool full', code: 'pool_full', extra: { next_free: [{ start: '2026-12-01T06:00:00Z', end: '2026-12-01T20:00:00Z' }] } }),
    )
    api.joinWaitlist.mockResolvedValueOnce({ id: 6, position: 1 })
    const wrapper = await mountForm({ RouterLink: true })
    await wrapper.get('form').trigger('submit')
    await flushPromises()
    await wrapper.get('[data-testid=waitlist-join-submit]').trigger('click')
    await flushPromises()
    expect(api.joinWaitlist).toHaveBeenCalledWith(expect.objectContaining({ pool: 2, gpu_model: '' }))
  })

  it('on a conflict, shows the windows my own lab limits would refuse as not offered, with why', async () => {
    const free = { start: '2026-12-02T06:00:00Z', end: '2026-12-02T10:00:00Z', refused: null }
    const overMyHours = {
      start: '2026-12-01T06:00:00Z',
      end: '2026-12-01T10:00:00Z',
      refused: { code: 'member_hours_exceeded', message: 'Your lab allows you 3 hours per week; 1 left.' },
    }
    api.createBooking.mockRejectedValueOnce(
      new ApiError(409, { message: 'Pool full', code: 'pool_full', extra: { next_free: [overMyHours, free] } }),
    )
    api.poolFreeWindows.mockResolvedValueOnce([overMyHours, free])
    const wrapper = await mountForm()
    await wrapper.get('form').trigger('submit')
    await flushPromises()
    expect(api.poolFreeWindows).toHaveBeenCalledWith(2, expect.objectContaining({ duration_minutes: 240 }))
    const refused = wrapper.findAll('[data-testid=next-free-refused]')
    expect(refused).toHaveLength(1)
    expect(refused[0]!.text()).toContain('Over your weekly hours in this lab')
    const options = wrapper.findAll('[data-testid=next-free-option]')
    expect(options).toHaveLength(1)
    await options[0]!.trigger('click')
    expect((wrapper.get('#booking-start').element as HTMLInputElement).value).toBe('2026-12-02T14:00')
  })

  it('says how long a node of the pool takes, from the server\'s figures', async () => {
    const wrapper = await mountForm()
    expect(wrapper.get('[data-testid=booking-ready-hint]').text()).toContain('40 seconds (slowest 2 minutes) over the last 7 nodes')
  })

  it('on a quota refusal says the server\'s figures, offers no "time taken" box and tells who can ask for more', async () => {
    api.createBooking.mockRejectedValueOnce(
      new ApiError(409, {
        message: 'Not enough quota for 2026-12: 8.00 GPU-hours needed, 2.50 remaining.',
        code: 'quota_exceeded',
        extra: { month: '2026-12-01', needed_gpu_hours: '8.00', remaining_gpu_hours: '2.50' },
      }),
    )
    const wrapper = await mountForm()
    await wrapper.get('form').trigger('submit')
    await flushPromises()
    expect(wrapper.get('[data-testid=form-error]').text()).toContain('This booking needs 8 GPU-hours in 2026-12; your lab has 2.5 left that month.')
    expect(wrapper.text()).not.toContain('That time is taken')
    expect(wrapper.find('[data-testid=next-free-option]').exists()).toBe(false)
    // alice is no lab admin here: she is told to ask one of the lab.
    expect(wrapper.get('[data-testid=form-refusal-help]').text()).toContain('ask an admin of')
  })

  it('sets the cost against the budget period the booking starts in, not the current one', async () => {
    const january = (left: string): Budget => ({
      id: 5, lab: { id: 1, name: 'Vision Lab', slug: 'vision' }, cost_centre: null, cost_centre_code: null,
      period: 'month', starts_on: null, ends_on: null, amount: '100.00', currency: 'USD', enforcement: 'hard',
      period_start: '2027-01-01T00:00:00Z', period_end: '2027-02-01T00:00:00Z',
      consumed: '0.00', forecast: '0.00', committed: '0.00', projected: '0.00', left, percent: '0.0',
    })
    api.listBudgets.mockImplementation(async (f?: { at?: string }) => [january(f?.at?.startsWith('2027-01') ? '7.00' : '90.00')])
    const wrapper = await mountForm()
    expect(api.listBudgets).toHaveBeenLastCalledWith({ lab: 1, at: '2026-12-01T01:00:00.000Z' })
    // Moved to January (09:00 Shanghai = 01:00 UTC): January's period is asked for and shown.
    await wrapper.get('#booking-start').setValue('2027-01-05T09:00')
    await wrapper.get('#booking-end').setValue('2027-01-05T13:00')
    await flushPromises()
    expect(api.listBudgets).toHaveBeenLastCalledWith({ lab: 1, at: '2027-01-05T01:00:00.000Z' })
    const row = wrapper.get('[data-testid=budget-left-row]').text()
    expect(row).toContain('$7.00')
    expect(row).not.toContain('$90.00')
  })

  it('refuses a window that ends before it starts without asking the API', async () => {
    const wrapper = await mountForm()
    await wrapper.get('#booking-end').setValue('2026-12-01T08:00')
    await wrapper.get('form').trigger('submit')
    await flushPromises()
    expect(api.createBooking).not.toHaveBeenCalled()
    expect(wrapper.text()).toContain('The end must be after the start.')
  })
})

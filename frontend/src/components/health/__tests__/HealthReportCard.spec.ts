import { describe, expect, it } from 'vitest'

import type { HealthReport } from '@/api/types'
import { mountWithApp } from '@/__tests__/helpers'
import HealthReportCard from '../HealthReportCard.vue'

const base: HealthReport = {
  id: 1,
  node: 2,
  instance_type: 3,
  verdict: 'pass',
  collected_at: '2026-11-30T08:00:00Z',
  findings: [],
  smoke: [
    { name: 'llm', status: 'passed', metric: 'tokens_per_s_batch1', value: 48, unit: 'tokens/s', baseline: 48 },
    { name: 'llm', status: 'passed', metric: 'tokens_per_s_batch128', value: 5200, unit: 'tokens/s', baseline: 5200 },
  ],
  facts: {},
  created_at: '2026-11-30T08:00:00Z',
}

describe('HealthReportCard', () => {
  it("shows the gate's wall time and marks a deep check", () => {
    const wrapper = mountWithApp(HealthReportCard, {
      props: { report: { ...base, deep: true, timing: { gate_wall_s: 62 } } },
    })
    expect(wrapper.get('[data-testid="health-gate-wall"]').text()).toContain('gate took 62 s')
    expect(wrapper.get('[data-testid="health-deep"]').text()).toContain('Deep check')
    expect(wrapper.findAll('tbody tr')).toHaveLength(2) // both LLM batch sizes, one row each
  })

  it('says nothing of time or depth when the agent did not report them', () => {
    const wrapper = mountWithApp(HealthReportCard, { props: { report: base }, locale: 'zh-CN' })
    expect(wrapper.find('[data-testid="health-gate-wall"]').exists()).toBe(false)
    expect(wrapper.find('[data-testid="health-deep"]').exists()).toBe(false)
  })
})

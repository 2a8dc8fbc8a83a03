import { describe, expect, it } from 'vitest'

import { mountWithApp } from '@/__tests__/helpers'
import AdminRecordForm, { type AdminFieldSpec } from '../AdminRecordForm.vue'

const fields: AdminFieldSpec[] = [
  { key: 'name', label: 'Name', type: 'text', required: true },
  { key: 'price_per_hour', label: 'Price', type: 'decimal', min: 0, hint: 'Per node-hour.' },
  { key: 'kind', label: 'Kind', type: 'select', options: [{ value: 'a', label: 'A' }] },
  { key: 'is_active', label: 'Active', type: 'checkbox' },
]

describe('AdminRecordForm', () => {
  it('labels every field and shows the API error under the field it names', () => {
    const wrapper = mountWithApp(AdminRecordForm, {
      props: {
        idPrefix: 'it',
        fields,
        modelValue: { name: 'x', price_per_hour: -1, kind: 'a', is_active: true },
        errors: { price_per_hour: ['Ensure this value is greater than or equal to 0.'] },
        submitLabel: 'Create',
      },
    })
    for (const f of fields) expect(wrapper.find(`label[for="it-${f.key}"]`).text()).toBe(f.label)
    const price = wrapper.find('#it-price_per_hour')
    expect(price.attributes('aria-invalid')).toBe('true')
    expect(price.attributes('aria-describedby')).toContain('it-price_per_hour-error')
    expect(wrapper.find('#it-price_per_hour-error').text()).toContain('greater than or equal to 0')
    expect(wrapper.find('#it-name').attributes('aria-invalid')).toBe('false')
    expect(wrapper.findAll('[data-testid=field-error]')).toHaveLength(1)
  })

  it('writes what is typed back to the model and submits', async () => {
    const model = { name: '', price_per_hour: '', kind: '', is_active: false }
    const wrapper = mountWithApp(AdminRecordForm, {
      props: {
        idPrefix: 'it', fields, modelValue: model, errors: {}, submitLabel: 'Create',
        'onUpdate:modelValue': (v: Record<string, unknown>) => wrapper.setProps({ modelValue: v }),
      },
    })
    await wrapper.find('#it-name').setValue('MI300X')
    await wrapper.find('#it-is_active').setValue(true)
    await wrapper.find('form').trigger('submit')
    expect(wrapper.emitted('submit')).toHaveLength(1)
    const current = wrapper.props('modelValue') as Record<string, unknown>
    expect(current.name).toBe('MI300X')
    expect(current.is_active).toBe(true)
  })
})

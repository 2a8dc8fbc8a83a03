import { describe, expect, it } from 'vitest'
import { defineComponent, h, nextTick } from 'vue'

import { mountWithApp } from '@/__tests__/helpers'
import { useAdminForm } from '@/composables/useAdminForm'
import AdminRecordEditor from '../AdminRecordEditor.vue'
import type { AdminFieldSpec } from '../AdminRecordForm.vue'

const fields: AdminFieldSpec[] = [
  { key: 'name', label: 'Name', type: 'text', required: true },
  { key: 'idle', label: 'Idle minutes', type: 'number', min: 5, max: 1440 },
]

describe('AdminRecordEditor', () => {
  it('says what it edits, writes typed values into the form state, and cancel resets it', async () => {
    let form!: ReturnType<typeof useAdminForm<{ name: string; idle: number | '' }>>
    let submitted = 0
    const Host = defineComponent({
      setup() {
        form = useAdminForm(() => ({ name: '', idle: '' as number | '' }))
        return () =>
          h(AdminRecordEditor, { form, idPrefix: 'pool', fields, newTitle: 'New pool', onSubmit: () => submitted++ })
      },
    })
    const wrapper = mountWithApp(Host)
    const title = () => wrapper.find('[data-testid=pool-form-title]').text()
    expect(title()).toBe('New pool')
    expect(wrapper.find('button.btn:not(.btn-primary)').exists()).toBe(false) // no cancel yet

    form.edit(7, { name: 'H100 tor1', idle: 20 })
    await nextTick()
    expect(title()).toBe('Editing H100 tor1')
    const idle = wrapper.find('#pool-idle')
    expect([idle.attributes('min'), idle.attributes('max')]).toEqual(['5', '1440'])
    await idle.setValue('30')
    expect(form.values.value.idle).toBe(30)
    await wrapper.find('form').trigger('submit')
    expect(submitted).toBe(1)

    await wrapper.find('button.btn:not(.btn-primary)').trigger('click')
    expect(form.editingId.value).toBeNull()
    expect(form.values.value).toEqual({ name: '', idle: '' })
    expect(title()).toBe('New pool')
  })
})

import { computed } from 'vue'
import { useI18n } from 'vue-i18n'

import { useSessionStore } from '@/stores/session'

/** Formatters that show every instant in the signed-in user's time zone and the UI language. */
export function useFormat() {
  const session = useSessionStore()
  const { locale } = useI18n()
  const timeZone = computed(() => session.timeZone)

  const dateTimeFmt = computed(
    () =>
      new Intl.DateTimeFormat(locale.value, {
        timeZone: timeZone.value,
        dateStyle: 'medium',
        timeStyle: 'short',
      }),
  )
  const timeFmt = computed(
    () => new Intl.DateTimeFormat(locale.value, { timeZone: timeZone.value, timeStyle: 'short' }),
  )
  const dateFmt = computed(
    () => new Intl.DateTimeFormat(locale.value, { timeZone: timeZone.value, dateStyle: 'medium' }),
  )
  const numberFmt = computed(
    () => new Intl.NumberFormat(locale.value, { maximumFractionDigits: 2 }),
  )
  const moneyFmt = computed(
    () => new Intl.NumberFormat(locale.value, { style: 'currency', currency: 'USD' }),
  )

  const toDate = (v: string | Date) => (typeof v === 'string' ? new Date(v) : v)

  return {
    timeZone,
    dateTime: (v: string | Date) => dateTimeFmt.value.format(toDate(v)),
    time: (v: string | Date) => timeFmt.value.format(toDate(v)),
    date: (v: string | Date) => dateFmt.value.format(toDate(v)),
    range: (start: string | Date, end: string | Date) =>
      dateTimeFmt.value.formatRange(toDate(start), toDate(end)),
    number: (v: number | string) => numberFmt.value.format(Number(v)),
    money: (v: number | string) => moneyFmt.value.format(Number(v)),
  }
}

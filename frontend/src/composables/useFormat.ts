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

  const minutesFmt = computed(
    () => new Intl.NumberFormat(locale.value, { style: 'unit', unit: 'minute', unitDisplay: 'long', maximumFractionDigits: 0 }),
  )
  const hoursFmt = computed(
    () => new Intl.NumberFormat(locale.value, { style: 'unit', unit: 'hour', unitDisplay: 'long', maximumFractionDigits: 1 }),
  )

  const toDate = (v: string | Date) => (typeof v === 'string' ? new Date(v) : v)
  /** A span of time as people say it: "7 minutes", "3.5 hours". */
  const duration = (ms: number) => {
    const minutes = Math.max(0, ms) / 60_000
    return minutes < 120 ? minutesFmt.value.format(Math.floor(minutes)) : hoursFmt.value.format(minutes / 60)
  }

  const secondsFmt = computed(
    () => new Intl.NumberFormat(locale.value, { style: 'unit', unit: 'second', unitDisplay: 'long' }),
  )
  /** A wait as people say it: "40 seconds" under a minute and a half, else whole minutes rounded
   *  up (a wait is never shorter than it reads), then hours. */
  const waitTime = (seconds: number) => {
    if (seconds < 90) return secondsFmt.value.format(Math.round(seconds))
    const minutes = Math.ceil(seconds / 60)
    return minutes < 120 ? minutesFmt.value.format(minutes) : hoursFmt.value.format(minutes / 60)
  }

  return {
    timeZone,
    dateTime: (v: string | Date) => dateTimeFmt.value.format(toDate(v)),
    time: (v: string | Date) => timeFmt.value.format(toDate(v)),
    date: (v: string | Date) => dateFmt.value.format(toDate(v)),
    range: (start: string | Date, end: string | Date) =>
      dateTimeFmt.value.formatRange(toDate(start), toDate(end)),
    number: (v: number | string) => numberFmt.value.format(Number(v)),
    money: (v: number | string) => moneyFmt.value.format(Number(v)),
    duration,
    waitTime,
    since: (v: string | Date) => duration(Date.now() - toDate(v).getTime()),
  }
}

import { markRaw } from 'vue'
import { createI18n } from 'vue-i18n'

import en from './en.json'

export const SUPPORTED_LOCALES = ['en', 'zh-CN'] as const
export type AppLocale = (typeof SUPPORTED_LOCALES)[number]
export type MessageSchema = typeof en

const STORAGE_KEY = 'labgpu.locale'

/** Map any BCP 47 tag (`zh`, `zh-Hans-CN`, `en-GB`, …) onto a locale we ship, or null. */
export function matchLocale(tag: string | null | undefined): AppLocale | null {
  if (!tag) return null
  const lower = tag.toLowerCase()
  if (lower.startsWith('zh')) return 'zh-CN'
  if (lower.startsWith('en')) return 'en'
  return null
}

/** The user's explicit choice, else the browser's language, else English. */
export function detectLocale(
  stored: string | null = safeStorageGet(),
  languages: readonly string[] = typeof navigator === 'undefined' ? [] : navigator.languages ?? [navigator.language],
): AppLocale {
  const fromStore = matchLocale(stored)
  if (fromStore) return fromStore
  for (const lang of languages) {
    const match = matchLocale(lang)
    if (match) return match
  }
  return 'en'
}

function safeStorageGet(): string | null {
  try {
    return localStorage.getItem(STORAGE_KEY)
  } catch {
    return null
  }
}

/**
 * How a count picks a message's form (`t(key, n)`). English keeps vue-i18n's default (one form for
 * 1, another for the rest); Chinese has one plural form, so its counted messages have one.
 */
export const PLURAL_RULES = { 'zh-CN': () => 0 }

// English (also the fallback) ships in the entry script; Chinese is a chunk of its own, fetched when
// chosen. The build precompiles both (vite.config.ts): no message is parsed in the browser, and the
// message compiler is not shipped.
//
// A language's messages are swapped whole, never edited in place, so vue-i18n needs to watch only
// which languages it holds, not every message inside: marked raw, a lookup walks plain objects
// instead of Vue's reactive proxies (each `t()` read every level of its key and of the message
// through a proxy that recorded a dependency; the dashboard's first load spent ≈76 ms in `t()` at
// 4× CPU slowdown, ≈56 ms after this; docs/benchmarks.md).
export const i18n = createI18n<[MessageSchema], AppLocale, false>({
  legacy: false,
  locale: 'en',
  fallbackLocale: 'en',
  messages: { en: markRaw(en) } as Record<AppLocale, MessageSchema>,
  pluralRules: PLURAL_RULES,
})

const loaders: Record<AppLocale, () => Promise<{ default: MessageSchema }>> = {
  en: async () => ({ default: en }),
  'zh-CN': () => import('./zh-CN.json'),
}
const loaded = new Set<AppLocale>(['en'])
let latest = 0

/** Fetches the messages of `locale` once. */
export async function loadLocale(locale: AppLocale): Promise<void> {
  if (loaded.has(locale)) return
  i18n.global.setLocaleMessage(locale, markRaw((await loaders[locale]()).default))
  loaded.add(locale)
}

/** Shows the app in `locale` once its messages are here; of calls that overlap, the last one wins. */
export async function setLocale(locale: AppLocale, remember = true): Promise<void> {
  const mine = ++latest
  try {
    await loadLocale(locale)
  } catch {
    return // the messages did not arrive (offline, a new release): the page stays as it is
  }
  if (mine !== latest) return
  i18n.global.locale.value = locale
  document.documentElement.lang = locale
  if (remember) {
    try {
      localStorage.setItem(STORAGE_KEY, locale)
    } catch {
      /* private mode: the choice lasts for this page only */
    }
  }
}

/** The API's language codes (Django's) for our locales. */
export function toApiLanguage(locale: AppLocale): 'en' | 'zh-hans' {
  return locale === 'zh-CN' ? 'zh-hans' : 'en'
}

export function hasStoredLocale(): boolean {
  return safeStorageGet() !== null
}

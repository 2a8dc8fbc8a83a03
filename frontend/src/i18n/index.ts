import { createI18n } from 'vue-i18n'

import en from './en.json'
import zhCN from './zh-CN.json'

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

export const i18n = createI18n<[MessageSchema], AppLocale, false>({
  legacy: false,
  locale: detectLocale(),
  fallbackLocale: 'en',
  messages: { en, 'zh-CN': zhCN },
  pluralRules: PLURAL_RULES,
})

export function setLocale(locale: AppLocale, remember = true): void {
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

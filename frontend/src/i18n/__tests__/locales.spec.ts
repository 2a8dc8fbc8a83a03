import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'
import { createI18n } from 'vue-i18n'

import en from '../en.json'
import zhCN from '../zh-CN.json'
import { PLURAL_RULES, detectLocale, matchLocale, toApiLanguage } from '../index'

function keys(obj: object, prefix = ''): string[] {
  return Object.entries(obj).flatMap(([k, v]) =>
    typeof v === 'object' && v !== null ? keys(v as object, `${prefix}${k}.`) : [`${prefix}${k}`],
  )
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return name === '__tests__' ? [] : sources(path)
    return /\.(vue|ts)$/.test(name) ? [path] : []
  })
}

describe('locales', () => {
  it('zh-CN and en have exactly the same messages', () => {
    expect(keys(zhCN).sort()).toEqual(keys(en).sort())
  })

  it('has no empty message in either language', () => {
    const values = (obj: object): string[] =>
      Object.values(obj).flatMap((v) => (typeof v === 'object' && v !== null ? values(v as object) : [String(v)]))
    expect(values(en).filter((v) => !v.trim())).toEqual([])
    expect(values(zhCN).filter((v) => !v.trim())).toEqual([])
  })

  it('defines every literal message key the source uses', () => {
    const known = new Set(keys(en))
    const srcDir = join(__dirname, '..', '..')
    const used = new Set<string>()
    for (const file of sources(srcDir)) {
      const text = readFileSync(file, 'utf8')
      for (const m of text.matchAll(/\b(?:t|\$t|te)\(\s*'([a-zA-Z0-9_.-]+)'/g)) used.add(m[1]!)
      for (const m of text.matchAll(/(?:title|label): '([a-z]+\.[a-zA-Z0-9_.]+)'/g)) used.add(m[1]!)
    }
    const missing = [...used].filter((k) => !known.has(k))
    expect(missing).toEqual([])
    expect(used.size).toBeGreaterThan(100)
  })
})

describe('language choice', () => {
  it('follows the browser by default and the user’s choice once made', () => {
    expect(detectLocale(null, ['zh-Hans-CN', 'en'])).toBe('zh-CN')
    expect(detectLocale(null, ['de-DE', 'en-GB'])).toBe('en')
    expect(detectLocale(null, ['fr'])).toBe('en')
    expect(detectLocale('en', ['zh-CN'])).toBe('en')
  })

  it('maps the API’s Django language codes', () => {
    expect(matchLocale('zh-hans')).toBe('zh-CN')
    expect(toApiLanguage('zh-CN')).toBe('zh-hans')
    expect(toApiLanguage('en')).toBe('en')
  })
})

describe('counted messages', () => {
  const i18n = (locale: 'en' | 'zh-CN') =>
    createI18n({ legacy: false, locale, fallbackLocale: 'en', messages: { en, 'zh-CN': zhCN }, pluralRules: PLURAL_RULES }).global

  it('say one booking and one member in English, not "1 bookings"', () => {
    const { t } = i18n('en')
    expect(t('blackouts.clashNote', 1)).toMatch(/^1 booking overlaps this window; its owner was emailed\./)
    expect(t('blackouts.clashNote', 3)).toMatch(/^3 bookings overlap this window; their owners were emailed\./)
    expect(t('siteadmin.memberCount', 1)).toBe('1 member')
    expect(t('siteadmin.memberCount', 4)).toBe('4 members')
  })

  it('have one form in Chinese, whatever the count', () => {
    const { t } = i18n('zh-CN')
    expect(t('blackouts.clashNote', 1)).toMatch(/^有 1 个预约与此时段重叠/)
    expect(t('blackouts.clashNote', 2)).toMatch(/^有 2 个预约与此时段重叠/)
    expect(t('siteadmin.memberCount', 1)).toBe('1 名成员')
  })
})

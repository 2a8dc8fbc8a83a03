import { describe, expect, it } from 'vitest'

// Issue 14: consequential actions ask in the app's own dialog (useConfirm: translated, styled,
// keyboard- and screen-reader-friendly), never in the browser's window.confirm.
// Components and the composables, stores and modules they call (tests quote the forms they look for).
const sources = import.meta.glob<string>(['../**/*.{vue,ts}', '!../**/__tests__/**', '!../**/*.spec.ts'], {
  query: '?raw',
  import: 'default',
  eager: true,
})

/** Whether `source` calls the browser's confirm: through window/globalThis/self, or bare where the
 * component binds no `confirm` of its own (`const confirm = useConfirm()`). */
function asksNatively(source: string): boolean {
  if (/\b(?:window|globalThis|self)\s*\.\s*confirm\s*\(/.test(source)) return true
  const bindsOwn = /\b(?:const|let|function)\s+confirm\b/.test(source)
  return !bindsOwn && /(?<![.\w$])confirm\s*\(/.test(source)
}

/** Whether `source` asks with the browser's prompt or alert (unstyled, untranslated buttons, and
 * a prompt's reason box the app cannot require): the app's dialog has useAskReason for that. */
function promptsNatively(source: string): boolean {
  if (/\b(?:window|globalThis|self)\s*\.\s*(?:prompt|alert)\s*\(/.test(source)) return true
  const bindsOwn = (name: string) => new RegExp(`\\b(?:const|let|function)\\s+${name}\\b`).test(source)
  return ['prompt', 'alert'].some((name) => !bindsOwn(name) && new RegExp(`(?<![.\\w$])${name}\\s*\\(`).test(source))
}

describe('confirm dialogs', () => {
  it('tells the browser confirm from the app one', () => {
    // The forms the last two views used before they moved to useConfirm, and a few more.
    expect(asksNatively("if (!window.confirm(t('volumes.confirmDelete'))) return")).toBe(true)
    expect(asksNatively("if (!window.confirm(t('chat.confirmDelete', { name: channel.name }))) return")).toBe(true)
    expect(asksNatively('if (!confirm(question)) return')).toBe(true)
    expect(asksNatively('const ok = globalThis.confirm (`Delete ${name}?`)')).toBe(true)
    const app = "const confirm = useConfirm()\nif (!(await confirm({ message: question, danger: true }))) return"
    expect(asksNatively(app)).toBe(false)
    expect(asksNatively("const confirm = useConfirm()\nif (!(await confirm(t('x')))) return")).toBe(false)
    expect(asksNatively('store.confirm(1); onConfirm(); data-testid="confirm-ok"')).toBe(false)
  })

  it('no component asks with window.confirm', () => {
    const files = Object.keys(sources)
    expect(files.filter((file) => file.endsWith('.vue')).length).toBeGreaterThan(20)
    expect(files).toContain('../composables/useConfirm.ts')
    expect(files.filter((file) => asksNatively(sources[file]!))).toEqual([])
  })

  it('tells the browser prompt from the app one', () => {
    expect(promptsNatively("reason = window.prompt(t('series.rejectAll')) ?? ''")).toBe(true)
    expect(promptsNatively('const r = prompt(question)')).toBe(true)
    expect(promptsNatively("globalThis.alert('done')")).toBe(true)
    expect(promptsNatively("const reason = await askReason({ message, reasonLabel: t('x') })")).toBe(false)
    expect(promptsNatively('t(\'series.prompt\'); onPrompt(); store.alert(1)')).toBe(false)
  })

  it('no component asks with window.prompt or window.alert', () => {
    expect(Object.keys(sources).filter((file) => promptsNatively(sources[file]!))).toEqual([])
  })
})

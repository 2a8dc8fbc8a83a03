import { describe, expect, it } from 'vitest'

// Issue 14: consequential actions ask in the app's own dialog (useConfirm: translated, styled,
// keyboard- and screen-reader-friendly), never in the browser's window.confirm.
const sources = import.meta.glob<string>('../**/*.vue', { query: '?raw', import: 'default', eager: true })

// Being reworked by other changes this session; they move to useConfirm next.
const NOT_YET = ['../views/account/ChatChannelListView.vue', '../views/account/VolumeListView.vue']

describe('confirm dialogs', () => {
  it('no component asks with window.confirm', () => {
    const files = Object.keys(sources)
    expect(files.length).toBeGreaterThan(20)
    const native = files.filter((file) => /\bwindow\.confirm\(|[^.\w]confirm\(\s*t\(/.test(sources[file]!) && !NOT_YET.includes(file))
    expect(native).toEqual([])
  })
})

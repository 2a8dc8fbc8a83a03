/**
 * A read started before the page's code arrived (the first page load), taken once by the page's
 * first mount. Only a recent one, asked with the same key (same labs, same month…), is taken: an
 * older answer would show the data as it was, not as it is. A failed one is dropped at once (a
 * signed-out visitor's 401): the page asks again.
 */
export function earlyRead<T>(maxAgeMs = 10_000) {
  let early: { key: string; at: number; read: Promise<T> } | null = null
  return {
    start(key: string, read: Promise<T>): void {
      read.catch(() => {
        if (early?.read === read) early = null
      })
      early = { key, at: Date.now(), read }
    },
    take(key: string): Promise<T> | null {
      const taken = early && early.key === key && Date.now() - early.at < maxAgeMs ? early.read : null
      early = null
      return taken
    },
  }
}

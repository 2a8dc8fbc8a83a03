// The first date formatted in a zone loads the browser's ICU data (locale data, time zones, the
// date pattern generator): 70–150 ms of main thread at 4× CPU slowdown, which every page pays
// before it shows a time. ICU's caches are shared by the whole renderer process, so this script
// fills them in a worker, on another thread, for the locales and shapes the app formats first
// (utils/time.ts, composables/useFormat.ts), while the main thread parses the page and runs the
// app; the app's first formatters then cost a few milliseconds (docs/benchmarks.md, SPA). The
// worker's code travels in a blob (the CSP allows workers from 'self' and blob:): fetching it again
// queued it behind the page's own requests. A file, not an inline script: the CSP allows scripts
// from 'self' only.
(() => {
  function warmUp() {
    try {
      const D = Intl.DateTimeFormat
      const two = '2-digit'
      new D().resolvedOptions() // the browser's own zone (utils/time.ts browserTimeZone)
      const parts = { timeZone: 'UTC', hourCycle: 'h23', year: 'numeric', month: two, day: two, hour: two, minute: two, second: two }
      new D('en-US', parts).formatToParts(0) // utils/time.ts partsFormatter
      for (const locale of ['en', 'zh-CN']) {
        new D(locale, { timeZone: 'UTC', dateStyle: 'medium', timeStyle: 'short' }).formatRange(0, 3600000)
        new Intl.NumberFormat(locale, { maximumFractionDigits: 2 }).format(1.5)
      }
    } catch {
      // Nothing to warm: the app's own formatting reports its errors.
    }
    close()
  }
  try {
    new Worker(URL.createObjectURL(new Blob([`(${warmUp})()`], { type: 'text/javascript' })))
  } catch {
    // No worker here: the app works the same, its first date costs more.
  }
})()

// The browser loads its time-zone and locale data (ICU) the first time anything formats a date in
// a zone: 25–40 ms of main thread, 100–150 ms at 4× CPU slowdown, which every page pays before it
// shows a time. Paid here, while the app's scripts are still downloading and the main thread is
// idle, instead of between the page's data arriving and being drawn (docs/benchmarks.md, SPA).
// A file, not an inline script: the CSP allows scripts from 'self' only.
try {
  new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', hour: '2-digit' }).format(0)
} catch {
  // Nothing to warm: the app's own formatting reports its errors.
}

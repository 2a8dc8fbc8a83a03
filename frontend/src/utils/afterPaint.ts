/**
 * Runs `work` once the browser has painted the next frame. For what nobody sees in a page's first
 * frame (the unread badge's count, the budgets panel below the fold, the tab's title): done
 * before, it held up the first paint of the dashboard (docs/benchmarks.md).
 */
export function afterNextPaint(work: () => void): void {
  requestAnimationFrame(() => setTimeout(work, 0))
}

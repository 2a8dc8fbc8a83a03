/**
 * Runs `work` once the browser has painted the next frame. For what nobody sees in a page's first
 * frame (the unread badge's count, the budgets panel below the fold, the tab's title): done
 * before, it held up the first paint of the dashboard (docs/benchmarks.md). A hidden page paints
 * nothing and runs no animation frame until it is shown, yet its tab shows the title: there the
 * work runs at once, after the current task.
 */
export function afterNextPaint(work: () => void): void {
  if (document.visibilityState === 'hidden') {
    setTimeout(work, 0)
    return
  }
  requestAnimationFrame(() => setTimeout(work, 0))
}

import { h, type FunctionalComponent } from 'vue'
import { useRouter } from 'vue-router'

/**
 * A link to one of the app's pages, drawn as a plain `<a>` that navigates like RouterLink: for
 * links that never show an "active" state, such as a table's row links. RouterLink resolves its
 * target through the router's matcher and keeps four computeds per link; a dashboard with twenty
 * bookings spent ≈35 ms of its first render at 4× CPU slowdown in its links (docs/benchmarks.md).
 * `to` is an app path ("/bookings/13"); a modified click (new tab, new window) stays the browser's.
 */
const BasePlainLink: FunctionalComponent<{ to: string }> = (props, { slots }) => {
  const router = useRouter()
  return h(
    'a',
    {
      href: router.options.history.createHref(props.to),
      onClick(event: MouseEvent) {
        if (event.defaultPrevented || event.button !== 0) return
        if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
        event.preventDefault()
        void router.push(props.to)
      },
    },
    slots.default?.(),
  )
}
BasePlainLink.props = { to: { type: String, required: true } }

export default BasePlainLink

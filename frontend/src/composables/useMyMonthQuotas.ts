import { listQuotas } from '@/api/quotas'
import type { Quota } from '@/api/types'
import { useSessionStore } from '@/stores/session'
import { earlyRead } from '@/utils/earlyRead'
import { monthParam, quotaMonthOf } from '@/utils/time'
import { useResource } from './useResource'

type Session = Pick<ReturnType<typeof useSessionStore>, 'labs'>

/** The quota month in effect (a UTC month) and my labs' quotas for it (one read per lab). */
function myMonthQuotas(session: Session) {
  const month = monthParam(quotaMonthOf())
  const labs = session.labs.map((lab) => lab.id)
  return {
    key: `${month} ${labs.join(',')}`,
    read: () => Promise.all(labs.map((lab) => listQuotas({ lab, month }))).then((perLab) => perLab.flat()),
  }
}

const early = earlyRead<Quota[]>()

/**
 * Start reading my labs' quotas as soon as the session is known (it names the labs), while the
 * dashboard's code arrives and the app mounts, instead of after the mount.
 */
export function prefetchMyMonthQuotas(session: Session): void {
  const { key, read } = myMonthQuotas(session)
  early.start(key, read())
}

/** My labs' quotas of the current month. */
export function useMyMonthQuotas() {
  const session = useSessionStore()
  return useResource(() => {
    const { key, read } = myMonthQuotas(session)
    return early.take(key) ?? read()
  })
}

import { useConfirmStore, type ConfirmRequest } from '@/stores/confirm'

/** Ask before a consequential action, in the app's own dialog; resolves to whether they confirmed. */
export function useConfirm(): (request: ConfirmRequest | string) => Promise<boolean> {
  const store = useConfirmStore()
  return (request) => store.ask(typeof request === 'string' ? { message: request } : request)
}

/** Ask which of `choices` to go ahead with, in the app's dialog; the index picked, or null. */
export function useChoose(): (request: ConfirmRequest & { choices: string[] }) => Promise<number | null> {
  const store = useConfirmStore()
  return (request) => store.choose(request)
}

/** Ask before an action that needs a reason (it is audited), in the app's dialog; the reason, or null. */
export function useAskReason(): (request: ConfirmRequest & { reasonLabel: string }) => Promise<string | null> {
  const store = useConfirmStore()
  return (request) => store.askReason(request)
}

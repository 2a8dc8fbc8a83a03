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

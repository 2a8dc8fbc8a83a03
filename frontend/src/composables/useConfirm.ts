import { useConfirmStore, type ConfirmRequest } from '@/stores/confirm'

/** Ask before a consequential action, in the app's own dialog; resolves to whether they confirmed. */
export function useConfirm(): (request: ConfirmRequest | string) => Promise<boolean> {
  const store = useConfirmStore()
  return (request) => store.ask(typeof request === 'string' ? { message: request } : request)
}

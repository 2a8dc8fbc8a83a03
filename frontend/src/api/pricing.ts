import { api, unwrap } from './client'
import type { components } from './schema'

export type PriceList = components['schemas']['PriceList']
export type InstanceTypePrice = components['schemas']['InstanceTypePrice']
export type DisplayCurrency = components['schemas']['DisplayCurrency']
export type SyncResult = components['schemas']['SyncResult']
export type Statement = components['schemas']['Statement']

export function getPrices(): Promise<PriceList> {
  return unwrap(api.GET('/api/v1/prices/'))
}

/** Read the providers' price lists now (site admins; the server does it hourly too). */
export function syncPrices(): Promise<SyncResult> {
  return unwrap(api.POST('/api/v1/prices/sync/'))
}

export function setAdjustment(instanceType: number, adjustmentPct: string) {
  return unwrap(
    api.POST('/api/v1/instance-types/{id}/price-adjustment/', {
      params: { path: { id: instanceType } },
      body: { adjustment_pct: adjustmentPct },
    }),
  )
}

export function setDisplayCurrency(body: { code: string; rate?: string; rate_date?: string | null }) {
  return unwrap(api.PUT('/api/v1/prices/display-currency/', { body }))
}

/** A lab's statement for a UTC month, `YYYY-MM`. */
export function getStatement(lab: number, month: string): Promise<Statement> {
  return unwrap(api.GET('/api/v1/labs/{lab_pk}/statement/', { params: { path: { lab_pk: lab }, query: { month } } }))
}

/** Download links (the session cookie authorises them). */
export function statementUrl(lab: number, month: string, kind: 'pdf' | 'html', language?: string): string {
  const params = new URLSearchParams({ month })
  if (language) params.set('language', language)
  return `/api/v1/labs/${lab}/statement/${kind}/?${params}`
}

// Names the SPA uses for the generated schema's components; schema.d.ts itself is never edited.
import type { components } from './schema'

type Schemas = components['schemas']

export type ApiErrorBody = Schemas['Error']
export type Window = Schemas['Window']
export type Me = Schemas['Me']
export type MePatch = Schemas['PatchedMe']
export type Membership = Schemas['Membership']
export type SshKey = Schemas['SSHKey']
export type ApiToken = Schemas['ApiToken']
export type ApiTokenCreated = Schemas['ApiTokenCreated']
export type ApiTokenScope = Schemas['ApiTokenRequest']['scopes'][number]
export type Lab = Schemas['Lab']
export type InstanceType = Schemas['InstanceType']
export type Pool = Schemas['Pool']
export type Availability = Schemas['Availability']
export type BusyBlock = Schemas['BusyBlock']
export type Blackout = Schemas['Blackout']
export type Booking = Schemas['Booking']
export type BookingStatus = Schemas['BookingStatus']
export type BookingCreate = Schemas['BookingRequest']
export type Quota = Schemas['Quota']
export type QuotaRequest = Schemas['QuotaRequest']
export type QuotaRequestCreate = Schemas['QuotaRequestRequest']
export type Page<T> = { count: number; next?: string | null; previous?: string | null; results: T[] }

export const LIVE_STATUSES: readonly BookingStatus[] = ['provisioning', 'ready', 'ending']
export const UPCOMING_STATUSES: readonly BookingStatus[] = ['pending', 'scheduled']
export const TERMINAL_STATUSES: readonly BookingStatus[] = [
  'completed',
  'cancelled',
  'rejected',
  'expired',
  'failed',
]
export const ALL_STATUSES: readonly BookingStatus[] = [
  'pending',
  'scheduled',
  'provisioning',
  'ready',
  'ending',
  'completed',
  'cancelled',
  'rejected',
  'expired',
  'failed',
]

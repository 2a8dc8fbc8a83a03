// Names the SPA uses for the generated schema's components; schema.d.ts itself is never edited.
import type { components } from './schema'

type Schemas = components['schemas']

export type ApiErrorBody = Schemas['Error']
export type Window = Schemas['Window']
/** A free window with the refusal the member's own lab limits would give it (null: none). */
export type FreeWindow = Schemas['FreeWindow']
export type Me = Schemas['Me']
export type AuthProviders = Schemas['AuthProviders']
export type MyIdentities = Schemas['MyIdentities']
export type SsoProvider = Schemas['SsoProvider']
export type GroupMapping = Schemas['GroupMapping']
export type GroupMappingCreate = Schemas['GroupMappingRequest']
export type GroupMappingRole = Schemas['GroupMappingRoleEnum']
export type GroupMappingSource = Schemas['GroupMappingSourceEnum']
export type MePatch = Schemas['PatchedMeRequest']
export type TimeZoneName = Schemas['TimezoneEnum']
export type ApiLanguage = Schemas['LanguageEnum']
export type Membership = Schemas['MyMembership']
export type LabSummary = Schemas['LabSummary']
export type SshKey = Schemas['SshKey']
export type ApiToken = Schemas['ApiToken']
export type Volume = Schemas['Volume']
export type StorageRow = Schemas['StorageRow']
export type UntrackedVolume = Schemas['UntrackedVolume']
export type LabVolumeSize = Schemas['LabVolumeSize']
export type VolumeCreate = Schemas['VolumeCreateRequest']
export type ApiTokenCreated = Schemas['ApiTokenCreated']
export type ApiTokenScope = Schemas['ScopesEnum']
export type CalendarFeed = Schemas['CalendarFeed']
export type CalendarFeedCreated = Schemas['CalendarFeedCreated']
export type FeedKind = Schemas['FeedKindEnum']
export type ChatChannel = Schemas['ChatChannel']
export type ChatChannelCreate = Schemas['ChatChannelCreateRequest']
export type ChatChannelUpdate = Schemas['PatchedChatChannelUpdateRequest']
export type ChatChannelKind = Schemas['ChatChannelKindEnum']
export type ChatDelivery = Schemas['ChatDelivery']
export type ChatEvent = Schemas['EventsEnum']
export type Lab = Schemas['Lab']
export type Member = Schemas['Membership']
export type MemberCreate = Schemas['MembershipRequest']
export type MemberPatch = Schemas['PatchedMembershipUpdateRequest']
export type MemberRole = Schemas['MembershipRoleEnum']
export type Invitation = Schemas['Invitation']
export type InvitationCreated = Schemas['InvitationCreated']
export type InvitationPreview = Schemas['InvitationPreview']
export type InvitationAccepted = Schemas['InvitationAccepted']
export type InstanceType = Schemas['InstanceType']
export type Pool = Schemas['NodePool']
export type Availability = Schemas['Availability']
export type BusyBlock = Schemas['BusyBlock']
export type Series = Schemas['Series']
export type SeriesCreate = Schemas['SeriesCreateRequest']
export type Occurrence = Schemas['Occurrence']
export type SeriesFrequency = Schemas['FrequencyEnum']
export type Weekday = Schemas['WeekdaysEnum']
export type SeriesDecision = Schemas['SeriesDecision']
export type Blackout = Schemas['Blackout']
export type BlackoutClash = Schemas['BlackoutClash']
export type BlackoutCreated = Schemas['BlackoutCreated']
export type Booking = Schemas['Booking']
export type NotebookAccess = Schemas['NotebookAccess']
export type BookingUtilisation = Schemas['BookingUtilisation']
export type UtilisationSample = Schemas['UtilisationSample']
export type BookingStatus = Schemas['BookingStatusEnum']
export type BookingCreate = Schemas['BookingCreateRequest']
export type PoolReadyTime = Schemas['PoolReadyTime']
export type BookingNode = Schemas['BookingNode']
export type ApprovalQueueItem = Schemas['ApprovalQueueItem']
export type DecisionOutcome = Schemas['DecisionOutcome']
export type AuditEvent = Schemas['AuditEvent']
export type Node = Schemas['Node']
export type NodeStatus = Schemas['NodeStatusEnum']
export type HealthReport = Schemas['HealthReport']
export type HealthVerdict = Schemas['VerdictEnum']
export type InstanceTypeHealth = Schemas['InstanceTypeHealth']
export type UsageRow = Schemas['UsageRow']
export type Quota = Schemas['Quota']
export type QuotaRequest = Schemas['QuotaRequest']
export type QuotaRequestStatus = Schemas['QuotaRequestStatusEnum']
export type QuotaRequestCreate = Schemas['QuotaRequestRequest']
/** A whole pool-window of the bookings list at once, each lab and user written once (GET /bookings/compact/). */
export type CompactBookings = Schemas['CompactBookings']
/** What a bookings table shows of a booking: the full list's and the compact list's in common. */
export type BookingRow = Pick<Booking, 'id' | 'pool_name' | 'start' | 'end' | 'purpose' | 'status'> & { lab: { name: string } }
export type Page<T> = { count: number; next?: string | null; previous?: string | null; results: T[] }

export const LIVE_STATUSES: readonly BookingStatus[] = ['provisioning', 'ready', 'ending']
export const UPCOMING_STATUSES: readonly BookingStatus[] = ['offered', 'pending', 'scheduled']
export const TERMINAL_STATUSES: readonly BookingStatus[] = [
  'completed',
  'cancelled',
  'rejected',
  'expired',
  'failed',
]
export const ALL_STATUSES: readonly BookingStatus[] = [
  'offered',
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
export type Budget = Schemas['Budget']
export type BudgetCreate = Schemas['BudgetCreateRequest']
export type BudgetUpdate = Schemas['PatchedBudgetUpdateRequest']
export type CostCentre = Schemas['CostCentre']
export type WaitlistEntry = Schemas['WaitlistEntry']
export type WaitlistEntryStatus = Schemas['WaitlistEntryStatusEnum']
export type WaitlistJoin = Schemas['WaitlistJoinRequest']

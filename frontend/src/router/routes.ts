import type { RouteRecordRaw } from 'vue-router'

import { prefetchMyMonthQuotas } from '@/composables/useMyMonthQuotas'
import { prefetchMyUpcomingBookings } from '@/composables/useMyUpcomingBookings'
import type { useSessionStore } from '@/stores/session'

declare module 'vue-router' {
  interface RouteMeta {
    /** Pages anyone may see (the login page). */
    public?: boolean
    /** Who may open the page beyond any signed-in user. */
    role?: 'lab_admin' | 'site_admin' | 'admin'
    /** i18n key of the page title. */
    title?: string
    /** Starts the page's reads that need no session, beside `/me/` on the first page load. */
    prefetch?: () => Promise<unknown> | void
    /** Starts the page's reads that need the session (its labs, its time zone) on the first page
     * load, as soon as `/me/` answers: before the page's code has run, not after it mounts. */
    prefetchWithSession?: (session: ReturnType<typeof useSessionStore>) => void
  }
}

// Every view is its own chunk: the first page load carries only the shell.
export const routes: RouteRecordRaw[] = [
  {
    path: '/login',
    name: 'login',
    component: () => import('@/views/auth/LoginView.vue'),
    meta: { public: true, title: 'nav.login' },
  },
  {
    // An invitation link: anyone may open it; accepting needs a session (the page says how).
    path: '/invite/:token',
    name: 'invitation',
    component: () => import('@/views/invitations/InvitationAcceptView.vue'),
    props: (route) => ({ token: String(route.params.token) }),
    meta: { public: true, title: 'invitations.acceptTitle' },
  },
  {
    // The link mailed to a new e-mail address: the link is the credential, no session needed.
    path: '/verify-email/:token',
    name: 'verify-email',
    component: () => import('@/views/account/EmailVerifyView.vue'),
    props: (route) => ({ token: String(route.params.token) }),
    meta: { public: true, title: 'emailVerify.title' },
  },
  {
    path: '/',
    name: 'dashboard',
    component: () => import('@/views/DashboardView.vue'),
    meta: { title: 'nav.dashboard', prefetch: prefetchMyUpcomingBookings, prefetchWithSession: prefetchMyMonthQuotas },
  },
  {
    path: '/calendar/:poolId?',
    name: 'calendar',
    component: () => import('@/views/bookings/PoolCalendarView.vue'),
    meta: { title: 'nav.calendar' },
  },
  {
    path: '/bookings',
    name: 'bookings',
    component: () => import('@/views/bookings/BookingListView.vue'),
    meta: { title: 'nav.bookings' },
  },
  {
    path: '/bookings/new',
    name: 'booking-new',
    component: () => import('@/views/bookings/BookingNewView.vue'),
    meta: { title: 'nav.newBooking' },
  },
  {
    path: '/bookings/place',
    name: 'booking-place',
    component: () => import('@/views/bookings/BookingPlaceView.vue'),
    meta: { title: 'nav.placeBooking' },
  },
  {
    path: '/bookings/:id(\\d+)',
    name: 'booking-detail',
    component: () => import('@/views/bookings/BookingDetailView.vue'),
    props: (route) => ({ id: Number(route.params.id) }),
    meta: { title: 'nav.bookingDetail' },
  },
  {
    path: '/waitlist',
    name: 'waitlist',
    component: () => import('@/views/waitlist/WaitlistView.vue'),
    meta: { title: 'nav.waitlist' },
  },
  {
    path: '/approvals',
    name: 'approvals',
    component: () => import('@/views/admin/ApprovalQueueView.vue'),
    meta: { title: 'nav.approvals', role: 'admin' },
  },
  {
    path: '/labs/:labId(\\d+)?',
    name: 'lab-members',
    component: () => import('@/views/labs/LabMembersView.vue'),
    meta: { title: 'nav.members', role: 'admin' },
  },
  {
    path: '/labs/:labId(\\d+)?/budgets',
    name: 'lab-budgets',
    component: () => import('@/views/budgets/LabBudgetsView.vue'),
    meta: { title: 'nav.budgets', role: 'admin' },
  },
  {
    path: '/quotas',
    name: 'quotas',
    component: () => import('@/views/quotas/QuotaListView.vue'),
    meta: { title: 'nav.quotas' },
  },
  {
    path: '/usage',
    name: 'usage',
    component: () => import('@/views/usage/UsageView.vue'),
    meta: { title: 'nav.usage' },
  },
  {
    path: '/directory-groups',
    name: 'group-mappings',
    component: () => import('@/views/admin/GroupMappingsView.vue'),
    meta: { title: 'nav.groupMappings', role: 'site_admin' },
  },
  {
    path: '/nodes',
    name: 'nodes',
    component: () => import('@/views/admin/NodeListView.vue'),
    meta: { title: 'nav.nodes', role: 'site_admin' },
  },
  {
    path: '/catalog',
    name: 'catalog-admin',
    component: () => import('@/views/admin/CatalogAdminView.vue'),
    meta: { title: 'nav.catalog', role: 'site_admin' },
  },
  {
    path: '/lab-admin',
    name: 'lab-admin',
    component: () => import('@/views/admin/LabAdminView.vue'),
    meta: { title: 'nav.labs', role: 'site_admin' },
  },
  {
    path: '/blackouts',
    name: 'blackouts',
    component: () => import('@/views/admin/BlackoutListView.vue'),
    meta: { title: 'nav.blackouts', role: 'site_admin' },
  },
  {
    path: '/tokens',
    name: 'tokens',
    component: () => import('@/views/account/TokenListView.vue'),
    meta: { title: 'nav.tokens' },
  },
  {
    path: '/volumes',
    name: 'volumes',
    component: () => import('@/views/account/VolumeListView.vue'),
    meta: { title: 'nav.volumes' },
  },
  {
    path: '/feeds',
    name: 'feeds',
    component: () => import('@/views/account/FeedListView.vue'),
    meta: { title: 'nav.feeds' },
  },
  {
    path: '/chat-channels',
    name: 'chat-channels',
    component: () => import('@/views/account/ChatChannelListView.vue'),
    meta: { title: 'nav.chat' },
  },
  {
    path: '/notifications',
    name: 'notifications',
    component: () => import('@/views/account/NotificationListView.vue'),
    meta: { title: 'notifications.title' },
  },
  {
    path: '/profile',
    name: 'profile',
    component: () => import('@/views/account/ProfileView.vue'),
    meta: { title: 'nav.profile' },
  },
  {
    path: '/:pathMatch(.*)*',
    name: 'not-found',
    component: () => import('@/views/NotFoundView.vue'),
    meta: { public: true, title: 'nav.notFound' },
  },
]

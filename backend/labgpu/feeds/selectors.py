"""Reads for calendar feeds: which feed a secret opens, and which bookings it shows (I-6)."""

from datetime import timedelta

from django.db.models import QuerySet
from django.utils.translation import gettext as _

from labgpu.accounts.selectors import lab_ids_of
from labgpu.accounts.services import hash_token
from labgpu.bookings.models import Booking
from labgpu.catalog.selectors import pools_visible_to
from labgpu.core.errors import NotFound
from labgpu.core.timeutils import now
from labgpu.feeds.models import CalendarFeed
from labgpu.feeds.services import FEED_PREFIX

# Calendar apps refetch the whole feed every few hours: keep it to recent and future bookings.
FEED_PAST_DAYS = 90
FEED_STATUSES = (*Booking.LIVE_STATUSES, Booking.Status.COMPLETED)


def feeds_of(user) -> QuerySet[CalendarFeed]:  # type: ignore[no-untyped-def]
    return CalendarFeed.objects.filter(user=user).select_related("pool", "created_by_token")


def feed_for_secret(raw: str) -> CalendarFeed:
    """The live feed the secret opens, or NotFound: unknown, revoked, made by a token that is
    revoked or expired, the user deactivated, or the pool no longer visible to its owner all look
    the same from outside."""
    if not raw.startswith(FEED_PREFIX):
        raise NotFound(_("No such feed."))
    feed = (
        CalendarFeed.objects.select_related("user", "pool", "created_by_token")
        .filter(secret_hash=hash_token(raw), revoked_at__isnull=True)
        .first()
    )
    if feed is None or feed.ended_at is not None or not feed.user.is_active:
        raise NotFound(_("No such feed."))
    if feed.pool_id and not pools_visible_to(feed.user).filter(pk=feed.pool_id).exists():
        raise NotFound(_("No such feed."))
    return feed


def feed_bookings(feed: CalendarFeed) -> QuerySet[Booking]:
    """A user feed: the user's own bookings. A pool feed: every booking of the pool; the caller
    anonymises those outside `own_lab_ids(feed)`."""
    bookings = Booking.objects.select_related("pool", "lab", "user").filter(
        status__in=FEED_STATUSES, end__gt=now() - timedelta(days=FEED_PAST_DAYS)
    )
    if feed.kind == CalendarFeed.Kind.POOL:
        bookings = bookings.filter(pool_id=feed.pool_id)
    else:
        bookings = bookings.filter(user_id=feed.user_id)
    return bookings.order_by("start", "id")


def own_lab_ids(feed: CalendarFeed) -> set[int]:
    """Labs whose bookings the feed may show in full. Decided at fetch time, so leaving a lab
    hides its details at the next refresh. Site admins are no exception: a feed URL travels
    into calendar apps and shared calendars, so it shows no more than a member would see."""
    return lab_ids_of(feed.user)

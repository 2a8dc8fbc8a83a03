"""Reads about bookings: visibility (I-6), availability and next free windows (I-1)."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise

from django.db.models import Q, QuerySet

from labgpu.accounts.models import User
from labgpu.accounts.selectors import admin_lab_ids_of, lab_ids_of
from labgpu.bookings.models import Booking
from labgpu.catalog.models import Blackout, NodePool
from labgpu.core.timeutils import ceil_to_grid, now

Period = tuple[datetime, datetime]


@dataclass(frozen=True)
class Interval:
    start: datetime
    end: datetime
    used: int
    free: int
    blackout: bool


def bookings_visible_to(user: User) -> QuerySet[Booking]:
    """Site admins see all; everyone else sees the bookings of their own labs, nothing more."""
    bookings = Booking.objects.select_related(
        "lab", "user", "pool", "pool__instance_type", "decided_by", "ended_by"
    ).prefetch_related("nodes")
    if user.is_site_admin:
        return bookings
    return bookings.filter(lab_id__in=lab_ids_of(user))


def booking_changeable_by(user: User, booking: Booking) -> bool:
    return (
        user.is_site_admin or booking.user_id == user.pk or booking.lab_id in admin_lab_ids_of(user)
    )


def live_reserved_periods(
    pool: NodePool, start: datetime, end: datetime, *, exclude_id: int | None = None
) -> list[Period]:
    rows = Booking.objects.filter(
        pool=pool,
        status__in=Booking.LIVE_STATUSES,
        reserved_start__lt=end,
        reserved_end__gt=start,
    )
    if exclude_id is not None:
        rows = rows.exclude(pk=exclude_id)
    return list(rows.values_list("reserved_start", "reserved_end"))


def blackouts_between(pool: NodePool, start: datetime, end: datetime) -> list[Period]:
    return list(
        Blackout.objects.filter(pool=pool, start__lt=end, end__gt=start).values_list("start", "end")
    )


def peak_usage(periods: list[Period], start: datetime, end: datetime) -> int:
    """Most periods that overlap at any one instant inside [start, end)."""
    events: list[tuple[datetime, int]] = []
    for p_start, p_end in periods:
        if p_start < end and p_end > start:
            events.append((max(p_start, start), 1))
            events.append((min(p_end, end), -1))
    # Ends sort before starts at the same instant: [a, b) and [b, c) do not overlap.
    events.sort(key=lambda event: (event[0], event[1]))
    peak = current = 0
    for _, delta in events:
        current += delta
        peak = max(peak, current)
    return peak


def availability_intervals(pool: NodePool, start: datetime, end: datetime) -> list[Interval]:
    """Split [start, end) where usage changes; each piece says how many nodes are free."""
    periods = live_reserved_periods(pool, start, end)
    blackouts = blackouts_between(pool, start, end)
    cuts = {start, end}
    for p_start, p_end in periods + blackouts:
        cuts.update(moment for moment in (p_start, p_end) if start < moment < end)
    ordered = sorted(cuts)
    intervals = []
    for piece_start, piece_end in pairwise(ordered):
        used = sum(1 for p_start, p_end in periods if p_start < piece_end and p_end > piece_start)
        dark = any(b_start < piece_end and b_end > piece_start for b_start, b_end in blackouts)
        free = 0 if dark else max(pool.capacity - used, 0)
        previous = intervals[-1] if intervals else None
        if previous and previous.used == used and previous.blackout == dark:
            intervals[-1] = Interval(previous.start, piece_end, used, free, dark)
        else:
            intervals.append(Interval(piece_start, piece_end, used, free, dark))
    return intervals


def reserved_period_for(
    pool: NodePool, start: datetime, end: datetime, *, on_demand: bool
) -> Period:
    lead = timedelta(0) if on_demand else timedelta(minutes=pool.provisioning_lead_minutes)
    return start - lead, end + timedelta(minutes=pool.teardown_grace_minutes)


def next_free_windows(
    pool: NodePool,
    *,
    duration: timedelta,
    after: datetime | None = None,
    count: int = 5,
    exclude_id: int | None = None,
) -> list[Period]:
    """The earliest `count` [start, end) windows of `duration` that the pool could still take.

    Candidates are the grid-aligned earliest start and every moment a node frees up (a reservation
    or a blackout ends), since a window can only open there.
    """
    earliest = max(after or now(), now())
    horizon = now() + timedelta(days=pool.max_days_ahead)
    lead = timedelta(minutes=pool.provisioning_lead_minutes)
    grace = timedelta(minutes=pool.teardown_grace_minutes)
    window_end = horizon + duration + lead + grace
    periods = live_reserved_periods(pool, earliest - lead, window_end, exclude_id=exclude_id)
    blackouts = blackouts_between(pool, earliest, window_end)
    grid = pool.granularity_minutes
    candidates = {ceil_to_grid(earliest, grid)}
    candidates.update(ceil_to_grid(p_end + lead, grid) for _, p_end in periods)
    candidates.update(ceil_to_grid(b_end, grid) for _, b_end in blackouts)
    windows: list[Period] = []
    for candidate in sorted(c for c in candidates if earliest <= c <= horizon):
        end = candidate + duration
        if any(b_start < end and b_end > candidate for b_start, b_end in blackouts):
            continue
        if peak_usage(periods, candidate - lead, end + grace) < pool.capacity:
            windows.append((candidate, end))
            if len(windows) == count:
                break
    return windows


def busy_blocks(pool: NodePool, start: datetime, end: datetime) -> QuerySet[Booking]:
    return (
        Booking.objects.filter(
            Q(pool=pool), status__in=Booking.LIVE_STATUSES, start__lt=end, end__gt=start
        )
        .select_related("lab")
        .order_by("start", "id")
    )

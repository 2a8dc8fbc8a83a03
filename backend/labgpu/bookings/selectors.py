"""Reads about bookings: visibility (I-6), availability and next free windows (I-1)."""

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from itertools import accumulate
from typing import NamedTuple

from django.db import connection
from django.db.models import (
    Exists,
    OuterRef,
    Q,
    QuerySet,
    prefetch_related_objects,
)

from labgpu.accounts.models import User
from labgpu.accounts.selectors import admin_lab_ids_of, lab_ids_of
from labgpu.bookings.models import Booking, BookingSeries, utc_iso_sql
from labgpu.catalog.models import Blackout, NodePool
from labgpu.core.rows import prepared_cursor
from labgpu.core.timeutils import (
    ceil_to_grid,
    hours,
    month_bounds,
    month_start,
    next_month,
    now,
    overlap,
)
from labgpu.quotas.selectors import TWO_PLACES, quota_usage

Period = tuple[datetime, datetime]
BLACKOUT = -1  # the slot (or id) of a blackout row in a UNION with reservations


class Interval(NamedTuple):  # a tuple: a pool-month makes a few hundred of them per read
    start: datetime
    end: datetime
    used: int
    free: int
    blackout: bool


def bookings_visible_to(user: User) -> QuerySet[Booking]:
    """Site admins see all; everyone else sees the bookings of their own labs, nothing more."""
    # What BookingSerializer reads. Not the pool's instance type: it needs only its id, and a
    # seventh relation in the join cost the planner more than the whole query (EXPLAIN: ~1 ms
    # without it, ~10 ms with it, on a loaded machine).
    bookings = Booking.objects.select_related("lab", "user", "pool", "decided_by", "ended_by")
    if user.is_site_admin:
        return bookings
    return bookings.filter(lab_id__in=lab_ids_of(user))


def series_visible_to(user: User) -> QuerySet[BookingSeries]:
    """As bookings_visible_to: site admins see every series, others their own labs' (I-6)."""
    series = BookingSeries.objects.select_related("lab", "user", "pool")
    if user.is_site_admin:
        return series
    return series.filter(lab_id__in=lab_ids_of(user))


def with_has_node(bookings: QuerySet[Booking]) -> QuerySet[Booking]:
    """Each booking says whether any node was made for it (`has_node`), so that nodes_load skips
    those with none: a month's bookings cancelled before their start need no query."""
    return bookings.annotate(
        has_node=Exists(Booking.objects.filter(pk=OuterRef("pk"), nodes__isnull=False))
    )


def nodes_load(bookings: list[Booking]) -> None:
    """Load the nodes of those `bookings` that can have one (Booking.current_node), in one query;
    none at all for a page of bookings still to start, as a calendar's month mostly is, nor for
    bookings read `with_has_node` that have none."""
    prefetch_related_objects(
        [
            booking
            for booking in bookings
            if booking.status not in Booking.NODELESS_STATUSES
            and getattr(booking, "has_node", True)
        ],
        "nodes",
    )


def awaiting_decision() -> Q:
    """Pending bookings, and approved bookings whose extension waits for a decision."""
    return Q(status=Booking.Status.PENDING) | Q(
        pending_end__isnull=False,
        status__in=[Booking.Status.SCHEDULED, Booking.Status.PROVISIONING, Booking.Status.READY],
    )


APPROVAL_QUEUE_LIMIT = 200


def awaiting_decision_of(user: User) -> list[Booking]:
    """What `user` may decide: their labs' (a site admin: every lab's) waiting bookings, soonest
    first, at most APPROVAL_QUEUE_LIMIT."""
    bookings = bookings_visible_to(user).filter(awaiting_decision())
    if not user.is_site_admin:
        bookings = bookings.filter(lab_id__in=admin_lab_ids_of(user))
    waiting = list(bookings.order_by("start", "id")[:APPROVAL_QUEUE_LIMIT])
    nodes_load(waiting)
    return waiting


def booking_changeable_by(user: User, booking: Booking) -> bool:
    return (
        user.is_site_admin or booking.user_id == user.pk or booking.lab_id in admin_lab_ids_of(user)
    )


# reservations_and_blackouts' statement, written once (as RESERVATIONS_BATCH_SQL below): as a
# UNION of two querysets the ORM spent more CPU assembling and compiling it than PostgreSQL spends
# running it, on every availability read and approval-queue row. `{reserved}` says which
# reservations: a range overlap over the GiST index of the live-slot exclusion constraint (spelled
# as the index is: with '[)'), or, for an empty or inverted period, which overlaps nothing as a
# range, the two comparisons that still hold what contains its instant.
RESERVATIONS_AND_BLACKOUTS_SQL = """
    SELECT reserved_start, reserved_end, false FROM bookings_booking
     WHERE pool_id = %(pool)s::bigint AND status = ANY(%(live)s) AND id <> %(exclude)s
       AND {reserved}
    UNION ALL
    SELECT start, "end", true FROM catalog_blackout
     WHERE pool_id = %(pool)s AND start < %(dark_end)s AND "end" > %(dark_start)s
"""
RESERVED_OVERLAP_SQL = RESERVATIONS_AND_BLACKOUTS_SQL.format(
    reserved="tstzrange(reserved_start, reserved_end, '[)') && tstzrange(%(start)s, %(end)s)"
)
RESERVED_AT_SQL = RESERVATIONS_AND_BLACKOUTS_SQL.format(
    reserved="reserved_start < %(end)s AND reserved_end > %(start)s"
)


def reservations_and_blackouts(
    pool: NodePool,
    reserved: Period,
    dark: Period,
    *,
    exclude_id: int | None = None,
) -> tuple[list[Period], list[Period]]:
    """The live reserved periods of `pool` that overlap `reserved`, and its blackouts that overlap
    `dark`, in one round trip (RESERVATIONS_AND_BLACKOUTS_SQL).

    Reservations are asked as a range overlap over the GiST index of the live-slot exclusion
    constraint, so the cost follows the period asked, not how many live bookings lie before it.
    """
    lo, hi = reserved
    params = {
        "pool": pool.pk,
        "live": list(Booking.LIVE_STATUSES),
        "exclude": exclude_id or 0,  # ids start at 1
        "start": lo,
        "end": hi,
        "dark_start": dark[0],
        "dark_end": dark[1],
    }
    with connection.cursor() as cursor:
        cursor.execute(RESERVED_OVERLAP_SQL if lo < hi else RESERVED_AT_SQL, params)
        rows = cursor.fetchall()
    periods: list[Period] = []
    darks: list[Period] = []
    for start, end, is_blackout in rows:
        (darks if is_blackout else periods).append((start, end))
    return periods, darks


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


class Usage:
    """How many `periods` hold a node at each instant, as a step function built once:
    `peak(start, end)` answers `peak_usage(periods, start, end)` by bisection, where a sweep of
    every period per question cost the window search most of its CPU."""

    def __init__(self, periods: list[Period]) -> None:
        deltas: dict[datetime, int] = {}
        for p_start, p_end in periods:
            deltas[p_start] = deltas.get(p_start, 0) + 1
            deltas[p_end] = deltas.get(p_end, 0) - 1
        self.moments = sorted(deltas)
        self.levels = list(accumulate(deltas[moment] for moment in self.moments))

    def peak(self, start: datetime, end: datetime) -> int:
        # Periods are half-open: the level at a moment holds from it until the next moment.
        first = bisect_right(self.moments, start)
        at_start = self.levels[first - 1] if first else 0
        last = bisect_left(self.moments, end, first)
        return max([at_start, *self.levels[first:last]])


def availability_intervals(pool: NodePool, start: datetime, end: datetime) -> list[Interval]:
    """Split [start, end) where usage changes; each piece says how many nodes are free.

    One sweep over the reservations' and blackouts' starts and ends (sorted once), not a count of
    every reservation for every piece: a busy pool-month has a few hundred of each.
    """
    periods, blackouts = reservations_and_blackouts(pool, (start, end), (start, end))
    # moment: how many reservations (apart: blackouts) begin there, less those that end there.
    used_at: dict[datetime, int] = {start: 0}
    dark_at: dict[datetime, int] = {}
    for at, rows in ((used_at, periods), (dark_at, blackouts)):
        for p_start, p_end in rows:
            p_start = max(p_start, start)
            at[p_start] = at.get(p_start, 0) + 1
            if p_end < end:
                at[p_end] = at.get(p_end, 0) - 1
    capacity = pool.capacity
    intervals: list[Interval] = []
    # The piece being swept: from `since`, `held` reservations and whether a blackout darkens it.
    since, held, darkened = start, 0, False
    used = dark = 0
    for moment in sorted(used_at.keys() | dark_at.keys()):  # all in [start, end)
        used += used_at.get(moment, 0)
        dark += dark_at.get(moment, 0)
        if used == held and bool(dark) == darkened:
            continue  # nothing changes here: the piece goes on
        if moment > since:
            free = 0 if darkened else max(capacity - held, 0)
            intervals.append(Interval(since, moment, held, free, darkened))
        since, held, darkened = moment, used, bool(dark)
    free = 0 if darkened else max(capacity - held, 0)
    intervals.append(Interval(since, end, held, free, darkened))
    return intervals


def reserved_period_for(
    pool: NodePool, start: datetime, end: datetime, *, on_demand: bool
) -> Period:
    lead = timedelta(0) if on_demand else timedelta(minutes=pool.provisioning_lead_minutes)
    return start - lead, end + timedelta(minutes=pool.teardown_grace_minutes)


WINDOW_BATCH = 256  # the most live reservations read per round trip while looking for free windows
# The first round trip reads this many, each next one twice as many: the calendar's windows and most
# pool_full answers lie within the first few reservations after the asked time, and reading (and
# stepping through) 256 of them cost the availability read more CPU than its intervals.
FIRST_WINDOW_BATCH = 32


@dataclass(frozen=True, slots=True)
class WindowSearch:
    """Where a window search of a pool looks: starts in [earliest, horizon], reading live
    reservations over [read_start, read_end); with the first batch of them when read already."""

    earliest: datetime
    horizon: datetime
    read_start: datetime
    read_end: datetime
    first_batch: list[tuple[datetime, datetime, int]] | None = None


def window_search(
    pool: NodePool,
    *,
    duration: timedelta,
    after: datetime | None = None,
    before: datetime | None = None,
    moment: datetime | None = None,
) -> WindowSearch | None:
    """The span `next_free_windows` searches for `duration` from `after` (default now) on, ending
    by `before` and starting within the pool's booking horizon; None when that is empty."""
    moment = moment or now()
    earliest = max(after or moment, moment)
    horizon = moment + timedelta(days=pool.max_days_ahead)  # the latest start a window may have
    if before is not None:
        horizon = min(horizon, before - duration)
    if earliest > horizon:
        return None
    lead = timedelta(minutes=pool.provisioning_lead_minutes)
    grace = timedelta(minutes=pool.teardown_grace_minutes)
    return WindowSearch(earliest, horizon, earliest - lead, horizon + duration + grace)


def next_free_windows(
    pool: NodePool,
    *,
    duration: timedelta,
    after: datetime | None = None,
    count: int = 5,
    exclude_id: int | None = None,
    before: datetime | None = None,
    search: WindowSearch | None = None,
) -> list[Period]:
    """The earliest `count` [start, end) windows of `duration` that the pool could still take
    (ending by `before` when given: a placement's latest end, which also bounds the read).

    Candidates are the grid-aligned earliest start and every moment a node frees up (a reservation
    or a blackout ends), since a window can only open there. The live reservations are read in
    start order, `FIRST_WINDOW_BATCH` first, then twice as many each time up to `WINDOW_BATCH`
    (the blackouts with the first batch, in one round trip): a `pool_full` answer reads what lies
    near the asked time, not every live booking of the next year, and windows found among the
    first few reservations (or a pool whose bookings all fit in the first batch) cost one statement.

    `search`: the span and first batch already read for this pool (`window_search`), as a search
    across many pools reads every pool's first batch in one statement (bookings/placement).
    """
    if search is None:
        search = window_search(pool, duration=duration, after=after, before=before)
    if search is None:
        return []
    earliest, horizon = search.earliest, search.horizon
    lead = timedelta(minutes=pool.provisioning_lead_minutes)
    grace = timedelta(minutes=pool.teardown_grace_minutes)
    grid = pool.granularity_minutes
    periods: list[Period] = []
    blackouts: list[Period] = []
    candidates = {ceil_to_grid(earliest, grid)}
    searched_to = earliest  # candidates before this moment were tried already
    last: tuple[datetime, int] | None = None  # the (reserved start, id) read last
    windows: list[Period] = []
    limit = min(FIRST_WINDOW_BATCH, WINDOW_BATCH)
    while True:
        if last is None and search.first_batch is not None and exclude_id is None:
            batch = search.first_batch
        else:
            batch = _reservations_batch(
                pool,
                earliest - lead,
                horizon + duration + grace,
                after=last,
                limit=limit,
                with_blackouts=last is None,
                exclude_id=exclude_id,
            )
        read = 0
        for r_start, r_end, pk in batch:
            if pk == BLACKOUT:
                blackouts.append((r_start, r_end))
                candidates.add(ceil_to_grid(r_end, grid))
            else:
                read += 1
                periods.append((r_start, r_end))
                candidates.add(ceil_to_grid(r_end + lead, grid))
                last = max(last or (r_start, pk), (r_start, pk))
        complete = read < limit
        limit = min(limit * 2, WINDOW_BATCH)
        usage = Usage(periods)
        for candidate in sorted(c for c in candidates if searched_to <= c <= horizon):
            end = candidate + duration
            # Reservations not read yet start at or after `last`: the window is decided once its
            # reservation ends by then (and every candidate before it is known).
            if not complete and last is not None and end + grace > last[0]:
                break
            searched_to = candidate + timedelta(microseconds=1)
            if any(b_start < end and b_end > candidate for b_start, b_end in blackouts):
                continue
            if usage.peak(candidate - lead, end + grace) < pool.capacity:
                windows.append((candidate, end))
                if len(windows) == count:
                    return windows
        if complete:
            return windows


# The window search's read, written once. Every pool_full answer sends this same statement; built
# through the ORM it cost ~2 ms of CPU to assemble and compile each time, 4x the ~0.5 ms of sending
# it and reading the rows (bench/storm_profile.py --rush). A row is (reserved start, end, id) of a
# live reservation, or (start, end, BLACKOUT) of a blackout; reservations in (reserved start, id)
# order after the keyset `after_*`, at most `batch` of them (the live partial indexes answer).
RESERVATIONS_BATCH_SQL = """
    (SELECT reserved_start, reserved_end, id FROM bookings_booking
      WHERE pool_id = %(pool)s::bigint AND status = ANY(%(live)s)
        AND reserved_start < %(end)s AND reserved_end > %(start)s AND id <> %(exclude)s
        AND (reserved_start, id) > (%(after_start)s, %(after_id)s)
      ORDER BY reserved_start, id LIMIT %(batch)s)
    UNION ALL
    (SELECT start, "end", %(blackout)s FROM catalog_blackout
      WHERE %(with_blackouts)s AND pool_id = %(pool)s AND start < %(end)s AND "end" > %(start)s)
"""
BEFORE_ALL = (datetime(1, 1, 1, tzinfo=UTC), 0)  # a keyset before every reservation


def _reservations_batch(
    pool: NodePool,
    start: datetime,
    end: datetime,
    *,
    after: tuple[datetime, int] | None,
    limit: int,
    with_blackouts: bool,
    exclude_id: int | None,
) -> list[tuple[datetime, datetime, int]]:
    """Up to `limit` live reservations overlapping [start, end) as (reserved start, end,
    id), in (reserved start, id) order from after `after`; with the blackouts overlapping the
    same period (id `BLACKOUT`) in the same statement."""
    after_start, after_id = after or BEFORE_ALL
    params = {
        "pool": pool.pk,
        "live": list(Booking.LIVE_STATUSES),
        "start": start,
        "end": end,
        "exclude": exclude_id or 0,  # ids start at 1
        "after_start": after_start,
        "after_id": after_id,
        "batch": limit,
        "with_blackouts": with_blackouts,
        "blackout": BLACKOUT,
    }
    with connection.cursor() as cursor:
        cursor.execute(RESERVATIONS_BATCH_SQL, params)
        return cursor.fetchall()


# busy_blocks' statement, written once: through the ORM (an EXISTS, five formatted moments, a
# join) it cost more CPU to assemble and compile than to run. The period test is Overlaps'
# spelling, which the GiST index `booking_pool_period` answers on both bounds; `own` says whether
# the row's lab is one of the user's (a site admin's: every lab); moments as the API writes them.
_START, _END = utc_iso_sql('b."start"'), utc_iso_sql('b."end"')
_R_START, _R_END = utc_iso_sql("b.reserved_start"), utc_iso_sql("b.reserved_end")
BUSY_SQL = f"""
    SELECT b.id, {_START}, {_END}, {_R_START}, {_R_END},
           b.status, b.user_id, b.lab_id, lab.name, lab.slug, b.series_id,
           %(site_admin)s OR EXISTS (
               SELECT 1 FROM accounts_membership m
                WHERE m.user_id = %(user)s AND m.lab_id = b.lab_id
           ) AS own
      FROM bookings_booking b JOIN accounts_lab lab ON lab.id = b.lab_id
     WHERE b.pool_id = %(pool)s::bigint AND b.status = ANY(%(live)s)
       AND tstzrange(b."start", b."end") && tstzrange(%(start)s, %(end)s)
     ORDER BY b."start", b.id
"""  # noqa: S608 - only utc_iso_sql of fixed columns is formatted in; values are parameters


def busy_blocks(user: User, pool: NodePool, start: datetime, end: datetime) -> list[dict]:
    """Live bookings of `pool` in [start, end) as the calendar shows them (BusyBlockSerializer):
    the user's own labs' with their id and lab, other labs' as anonymous blocks (I-6).

    One statement (BUSY_SQL, prepared once per connection: parsing and planning it cost as much
    as running it) over the GiST index `booking_pool_period`, which also says whether
    each row's lab is one of the user's (an EXISTS over their memberships, not a second round trip)
    and writes the moments as the API does (utc_iso_sql); rows are rendered as plain dicts.
    """
    params = {
        "site_admin": user.is_site_admin,
        "user": user.pk,
        "pool": pool.pk,
        "live": list(Booking.LIVE_STATUSES),
        "start": start,
        "end": end,
    }
    with prepared_cursor() as cursor:
        cursor.execute(BUSY_SQL, params)
        rows = cursor.fetchall()
    me = user.pk
    return [
        {
            "start": b_start,
            "end": b_end,
            "reserved_start": r_start,
            "reserved_end": r_end,
            "status": status,
            "mine": user_id == me,
            "booking": pk if own else None,
            "lab": {"id": lab_id, "name": name, "slug": slug} if own else None,
            # Which series it is an occurrence of: only for the user's own labs (I-6).
            "series": series if own else None,
        }
        for (
            pk,
            b_start,
            b_end,
            r_start,
            r_end,
            status,
            user_id,
            lab_id,
            name,
            slug,
            series,
            own,
        ) in rows
    ]


# bookings_compact's statement, written once, as BUSY_SQL is. Which rows: those of
# bookings_visible_to (a site admin's: every lab's; anyone else's: their own labs', an EXISTS over
# their memberships in the same statement rather than a round trip for their lab ids), filtered as
# the list's BookingFilter filters `pool` + `start_after` + `end_before` (a range overlap over the
# GiST index `booking_pool_period`, the pool id as bigint), `status` and `mine`; in the list's
# order. Moments are written as the API writes them (utc_iso_sql), so Python formats none.
_PENDING_END = utc_iso_sql("b.pending_end")
COMPACT_SQL = f"""
    SELECT b.id, b.lab_id, lab.name, lab.slug, b.user_id, u.username, u.first_name, u.last_name,
           {_START}, {_END}, {_PENDING_END}, b.status, b.purpose, b.series_id, b.gpu_count,
           b.on_demand
      FROM bookings_booking b
      JOIN accounts_lab lab ON lab.id = b.lab_id
      JOIN accounts_user u ON u.id = b.user_id
     WHERE b.pool_id = %(pool)s::bigint
       AND tstzrange(b."start", b."end") && tstzrange(%(start)s, %(end)s)
       AND (%(site_admin)s OR EXISTS (
               SELECT 1 FROM accounts_membership m
                WHERE m.user_id = %(user)s AND m.lab_id = b.lab_id
           ))
       AND (%(any_status)s OR b.status = ANY(%(statuses)s))
       AND (NOT %(mine)s OR b.user_id = %(user)s)
     ORDER BY b."start", b.id
"""  # noqa: S608 - only utc_iso_sql of fixed columns is formatted in; values are parameters


def bookings_compact(
    user: User,
    *,
    pool_id: int,
    start_after: datetime,
    end_before: datetime,
    statuses: list[str] | None = None,
    mine: bool = False,
) -> dict:
    """Every booking `user` may see (bookings_visible_to) in pool `pool_id` that overlaps
    [start_after, end_before), in the list's order, as CompactBookingsSerializer documents it:
    each booking's own fields, its lab and user as ids into `labs` and `users` (each written once).

    The same rows and values as the paginated list `GET /bookings/?pool=…&start_after=…&
    end_before=…` (tests/test_compact_bookings.py holds them to it and to the database rows), in
    one statement (COMPACT_SQL, prepared once per connection) rendered as plain dicts: a whole
    pool-month, not a page of it.
    """
    params = {
        "site_admin": user.is_site_admin,
        "user": user.pk,
        "pool": pool_id,
        "start": start_after,
        "end": end_before,
        "any_status": not statuses,
        "statuses": list(statuses or ()),
        "mine": mine,
    }
    with prepared_cursor() as cursor:
        cursor.execute(COMPACT_SQL, params)
        rows = cursor.fetchall()
    labs: dict[int, dict] = {}
    users: dict[int, dict] = {}
    bookings = []
    for (
        pk,
        lab_id,
        lab_name,
        lab_slug,
        user_id,
        username,
        first_name,
        last_name,
        b_start,
        b_end,
        pending_end,
        status,
        purpose,
        series,
        gpu_count,
        on_demand,
    ) in rows:
        if lab_id not in labs:
            labs[lab_id] = {"id": lab_id, "name": lab_name, "slug": lab_slug}
        if user_id not in users:
            users[user_id] = {
                "id": user_id,
                "username": username,
                "first_name": first_name,
                "last_name": last_name,
            }
        bookings.append(
            {
                "id": pk,
                "lab": lab_id,
                "user": user_id,
                "start": b_start,
                "end": b_end,
                "pending_end": pending_end,
                "status": status,
                "purpose": purpose,
                "series": series,
                "gpu_count": gpu_count,
                "on_demand": on_demand,
            }
        )
    return {
        "pool": pool_id,
        "count": len(bookings),
        "labs": list(labs.values()),
        "users": list(users.values()),
        "bookings": bookings,
    }


@dataclass(frozen=True)
class QuotaImpact:
    """A month the decision touches: the lab's quota and its use before and after approving."""

    month: date
    limit_gpu_hours: Decimal  # 0 without a quota row: no hours at all
    used_before: Decimal
    used_after: Decimal

    @property
    def exceeds(self) -> bool:
        return self.used_after > self.limit_gpu_hours


@dataclass(frozen=True)
class DecisionContext:
    """What a lab admin weighs before deciding a booking or its extension request."""

    is_extension: bool
    end_after: datetime  # the end the booking has once approved
    quota: list[QuotaImpact]
    blackouts: list[Blackout]
    capacity_free: bool  # a node is still free over the whole period asked


def decision_context(booking: Booking) -> DecisionContext:
    """The quota (used + committed GPU-hours of the lab's instance type, before → after), the
    blackouts over the asked period, and whether the pool still has room for it.

    A pending booking and a pending extension already hold their slot and count as committed, so
    "before" leaves out what the decision is about: the whole booking, or the extension's hours.
    An extension is shown as the approval judges it (snapshot.Ask.added_from): the quota months
    and blackouts from its current end on, not the time already accepted.
    """
    is_extension = booking.status != Booking.Status.PENDING and booking.pending_end is not None
    end_after = booking.pending_end or booking.end
    kept_end = booking.end if is_extension else booking.start
    added_from = kept_end  # where the time the decision is about begins
    impacts = []
    month = month_start(added_from)
    while month_bounds(month)[0] < end_after:
        begin, finish = month_bounds(month)
        usage = quota_usage(
            lab_id=booking.lab_id,
            instance_type_id=booking.pool.instance_type_id,
            month=month,
            exclude_booking_id=booking.pk,
        )
        base = usage.used + usage.committed
        kept = Decimal(hours(overlap(booking.start, kept_end, begin, finish))) * booking.gpu_count
        asked = Decimal(hours(overlap(booking.start, end_after, begin, finish))) * booking.gpu_count
        impacts.append(
            QuotaImpact(
                month=month,
                limit_gpu_hours=usage.quota_gpu_hours,
                used_before=(base + kept).quantize(TWO_PLACES),
                used_after=(base + asked).quantize(TWO_PLACES),
            )
        )
        month = next_month(month)
    pool = booking.pool
    grace = timedelta(minutes=pool.teardown_grace_minutes)
    reserved = (booking.reserved_start, end_after + grace)
    others, _ = reservations_and_blackouts(
        pool, reserved, (booking.start, end_after), exclude_id=booking.pk
    )
    return DecisionContext(
        is_extension=is_extension,
        end_after=end_after,
        quota=impacts,
        blackouts=list(
            Blackout.objects.filter(pool=pool, start__lt=end_after, end__gt=added_from).order_by(
                "start"
            )
        ),
        capacity_free=peak_usage(others, *reserved) < pool.capacity,
    )

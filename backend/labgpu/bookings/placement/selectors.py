"""Where a placement can go: the pools of a GPU model a lab may book, and the earliest window of
each (read without locks: the booking re-checks everything under the pool lock)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Exists, OuterRef

from labgpu.accounts.models import Membership, User
from labgpu.bookings.free_windows import member_free_windows
from labgpu.bookings.models import Booking
from labgpu.bookings.selectors import (
    BLACKOUT,
    FIRST_WINDOW_BATCH,
    WINDOW_BATCH,
    WindowSearch,
    window_search,
)
from labgpu.catalog.models import NodePool
from labgpu.core.errors import ApplicationError
from labgpu.core.timeutils import iso, now

ALTERNATIVES = 5  # how many other windows a placement that found none suggests


@dataclass(frozen=True, slots=True)
class PlacementAsk:
    """What is asked: `duration` on a GPU of `gpu_model` (instances of `gpu_count` GPUs, when
    given), starting at `after` or later (None: now) and ending by `before` (None: as far ahead
    as each pool books), in one of `regions` (empty: any)."""

    gpu_model: str
    duration: timedelta
    after: datetime | None = None
    before: datetime | None = None
    regions: tuple[str, ...] = ()
    gpu_count: int | None = None

    @property
    def minutes(self) -> int:
        return int(self.duration.total_seconds() // 60)


@dataclass(frozen=True, slots=True)
class PlacementWindow:
    pool: NodePool  # with its instance type
    start: datetime
    end: datetime
    # The refusal the member's own limits would give a booking of it (None: none would).
    refused: ApplicationError | None = None


def placement_pools(
    *, user: User, lab_id: int | None, ask: PlacementAsk, any_region: bool = False
) -> list[NodePool]:
    """The open pools of the asked GPU model (and GPU count, and regions unless `any_region`)
    that `lab_id` may book — open to every lab or to it — in one statement. Without a lab (a site
    admin in none) every open pool of the model; anyone else without one books nothing."""
    if lab_id is None and not user.is_site_admin:
        return []
    pools = NodePool.objects.select_related("instance_type").filter(
        is_active=True, instance_type__gpu_model__iexact=ask.gpu_model
    )
    if ask.gpu_count is not None:
        pools = pools.filter(instance_type__gpu_count=ask.gpu_count)
    if ask.regions and not any_region:
        pools = pools.filter(region__in=ask.regions)
    if lab_id is not None:
        allowed = NodePool.allowed_labs.through.objects.filter(nodepool_id=OuterRef("pk"))
        pools = pools.filter(~Exists(allowed) | Exists(allowed.filter(lab_id=lab_id)))
    return list(pools.order_by("name", "id"))


def takes(pool: NodePool, minutes: int) -> bool:
    """Whether `pool` books `minutes` at all: within its shortest and longest, on its grid."""
    return (
        pool.min_duration_minutes <= minutes <= pool.max_duration_minutes
        and minutes % pool.granularity_minutes == 0
    )


def _order(window: PlacementWindow) -> tuple:
    # Earliest first; at one start the smaller instance (fewer GPUs charged), then by name.
    return (window.start, window.pool.instance_type.gpu_count, window.pool.name, window.pool.pk)


def placement_windows(
    pools: list[NodePool],
    *,
    user: User,
    membership: Membership | None,
    ask: PlacementAsk,
) -> list[PlacementWindow]:
    """The earliest window of each pool that takes the duration, earliest first. With a
    `membership`, each is marked with the refusal the member's own limits would give it.

    One window search per pool, each bounded by `ask.before` (its read stops there), usually one
    statement: the pool's live reservations from `after` on, in the GiST-indexed batches of
    `next_free_windows`."""
    moment = now()
    searches = {}
    for pool in pools:
        if not takes(pool, ask.minutes):
            continue
        search = window_search(
            pool, duration=ask.duration, after=ask.after, before=ask.before, moment=moment
        )
        if search is not None:
            searches[pool.pk] = (pool, search)
    first = first_batches([(pool.pk, search) for pool, search in searches.values()])
    found = []
    for pool, search in searches.values():
        for window in member_free_windows(
            pool,
            user=user,
            membership=membership,
            duration=ask.duration,
            after=ask.after,
            before=ask.before,
            count=1,
            search=replace(search, first_batch=first[pool.pk]),
        ):
            found.append(PlacementWindow(pool, window.start, window.end, window.refused))
    found.sort(key=_order)
    return found


# One pool's first batch of the window search (selectors.RESERVATIONS_BATCH_SQL with no keyset
# yet, and its blackouts), written once per pool into one UNION ALL: ten pools cost one round trip
# instead of ten. Each part is answered by the live-slot GiST index as the single pool's is.
_FIRST_RESERVATIONS = """
    (SELECT %s::bigint, reserved_start, reserved_end, id FROM bookings_booking
      WHERE pool_id = %s::bigint AND status = ANY(%s)
        AND reserved_start < %s AND reserved_end > %s
      ORDER BY reserved_start, id LIMIT %s)
"""
_BLACKOUTS = """
    (SELECT pool_id, start, "end", %s FROM catalog_blackout
      WHERE pool_id = %s AND start < %s AND "end" > %s)
"""


def first_batches(
    searches: list[tuple[int, WindowSearch]],
) -> dict[int, list[tuple[datetime, datetime, int]]]:
    """Per pool id, the first batch `next_free_windows` would read for its `search` (live
    reservations overlapping the read span, in (reserved start, id) order, at most the first batch
    size; with the blackouts over it, id BLACKOUT), all in one statement."""
    batches: dict[int, list[tuple[datetime, datetime, int]]] = {pk: [] for pk, _ in searches}
    if not searches:
        return batches
    parts, params = [], []
    live = list(Booking.LIVE_STATUSES)
    limit = min(FIRST_WINDOW_BATCH, WINDOW_BATCH)
    for pk, search in searches:
        parts.append(_FIRST_RESERVATIONS)
        params += [pk, pk, live, search.read_end, search.read_start, limit]
        parts.append(_BLACKOUTS)
        params += [BLACKOUT, pk, search.read_end, search.read_start]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        for pk, start, end, row_id in cursor.fetchall():
            batches[pk].append((start, end, row_id))
    return batches


def placement_alternatives(
    *,
    user: User,
    lab_id: int | None,
    membership: Membership | None,
    ask: PlacementAsk,
    count: int = ALTERNATIVES,
) -> list[PlacementWindow]:
    """When nothing fits: the earliest windows from `after` on in any region and without the
    latest end — later in the asked regions, or in time in another — one per pool, earliest
    first."""
    pools = placement_pools(user=user, lab_id=lab_id, ask=ask, any_region=True)
    later = replace(ask, before=None)
    return placement_windows(pools, user=user, membership=membership, ask=later)[:count]


def window_payload(window: PlacementWindow) -> dict:
    """A window as the API writes it (PlacementWindowSerializer), in answers and in 409s."""
    pool = window.pool
    refused = window.refused
    return {
        "pool": pool.pk,
        "pool_name": pool.name,
        "region": pool.region,
        "gpu_model": pool.instance_type.gpu_model,
        "gpu_count": pool.instance_type.gpu_count,
        "requires_approval": pool.requires_approval,
        "start": iso(window.start),
        "end": iso(window.end),
        "refused": refused and {"code": refused.code, "message": refused.message},
    }

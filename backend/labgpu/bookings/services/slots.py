"""Capacity: which slot of its pool a booking holds (I-1), and where the next free windows are.

A live booking holds one slot over its reserved period; the exclusion constraint refuses two live
bookings in one slot over overlapping periods, whatever the code does.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.utils.translation import gettext as _

from labgpu.bookings.models import Booking
from labgpu.bookings.selectors import next_free_windows, peak_usage
from labgpu.catalog.models import NodePool
from labgpu.core.errors import Conflict
from labgpu.core.timeutils import now

Period = tuple[datetime, datetime]
Taken = list[tuple[int, datetime, datetime]]  # (slot, reserved start, reserved end)


class PoolFull(Conflict):
    """No node of the pool is free over the asked period; the answer carries the next free windows
    (`extra["next_free"]`).

    The windows are read when the answer is built (the first read of `extra`), not where the rule
    fails: by then the transaction that found the pool full has rolled back and released the pool
    lock, so the requests queued on the pool do not also wait for this one's window search. The
    windows are as free as they were when read, which is as late as the answer can know.
    """

    default_code = "pool_full"

    def __init__(
        self,
        message: str,
        *,
        pool: NodePool,
        duration: timedelta,
        after: datetime,
        exclude_id: int | None = None,
    ) -> None:
        self._asked = (pool, duration, after, exclude_id)
        self._extra: dict[str, Any] | None = None
        super().__init__(message)

    @property
    def extra(self) -> dict[str, Any]:
        if self._extra is None:
            pool, duration, after, exclude_id = self._asked
            windows = next_free_windows(pool, duration=duration, after=after, exclude_id=exclude_id)
            self._extra = {"next_free": windows_payload(windows)}
        return self._extra

    @extra.setter
    def extra(self, value: dict[str, Any]) -> None:
        """ApplicationError sets an empty `extra`; the windows take its place when first read."""
        if value:
            raise ValueError("PoolFull's extra is its next free windows")


def windows_payload(windows: list[Period]) -> list[dict[str, str]]:
    return [{"start": start.isoformat(), "end": end.isoformat()} for start, end in windows]


def pool_full(
    pool: NodePool,
    *,
    duration: timedelta,
    after: datetime,
    exclude_id: int | None = None,
    message: str | None = None,
) -> PoolFull:
    return PoolFull(
        message or _("%(pool)s is fully booked for that time.") % {"pool": pool.name},
        pool=pool,
        duration=duration,
        after=after,
        exclude_id=exclude_id,
    )


def free_slot(capacity: int, taken: Taken) -> int | None:
    """The lowest slot that no overlapping reservation holds."""
    held = {slot for slot, _, _ in taken}
    return next((slot for slot in range(capacity) if slot not in held), None)


def fits(capacity: int, taken: Taken, reserved: Period) -> bool:
    """Whether a node is free at every instant of `reserved` (perhaps not in one slot throughout:
    then `place` repacks)."""
    if free_slot(capacity, taken) is not None:
        return True
    return peak_usage([(start, end) for _, start, end in taken], *reserved) < capacity


def place(pool: NodePool, taken: Taken, reserved: Period, exclude_id: int | None = None) -> int:
    """The slot for a booking that `fits`: a free one, or one made free by repacking."""
    slot = free_slot(pool.capacity, taken)
    if slot is not None:
        return slot
    slot = repack(pool, reserved, exclude_id)
    assert slot is not None, "place() is only called for a booking that fits"
    return slot


def repack(pool: NodePool, reserved: Period, exclude_id: int | None) -> int | None:
    """Re-colour every current and future reservation so the new one fits.

    Capacity exists at every instant but no single slot is free throughout (fragmentation).
    Greedy colouring in start order uses no more slots than the peak overlap (interval graphs are
    perfect), so this always succeeds when the peak is below capacity.
    """
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS booking_live_slot_no_overlap DEFERRED")
    rows = list(
        Booking.objects.filter(
            pool=pool, status__in=Booking.LIVE_STATUSES, reserved_end__gt=min(reserved[0], now())
        )
        .exclude(pk=exclude_id)
        .values_list("pk", "slot", "reserved_start", "reserved_end")
    )
    items = [(rs, re, pk, slot) for pk, slot, rs, re in rows] + [(*reserved, None, None)]
    items.sort(key=lambda item: (item[0], item[2] or 0))
    slot_free_at: list[datetime | None] = [None] * pool.capacity
    new_slot = None
    for rs, re, pk, old_slot in items:
        slot = next(
            (i for i, free_at in enumerate(slot_free_at) if free_at is None or free_at <= rs), None
        )
        if slot is None:
            return None
        slot_free_at[slot] = re
        if pk is None:
            new_slot = slot
        elif slot != old_slot:
            Booking.objects.filter(pk=pk).update(slot=slot)
    return new_slot

"""Free windows a member may actually book.

`next_free_windows` answers for the pool: where a node is free. A member of a lab with personal
limits (hours per week, bookings at a time) would be refused some of those windows by the same
rule that refuses a booking (`rules.check_member_limits`); this marks each window with the refusal
it would get, so the app never offers a window as bookable that the create would turn down.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from labgpu.accounts.models import Membership, User
from labgpu.bookings.models import Booking
from labgpu.bookings.selectors import WindowSearch, next_free_windows
from labgpu.bookings.services.rules import check_member_limits
from labgpu.bookings.services.snapshot import Ask, BookingSnapshot
from labgpu.catalog.models import NodePool
from labgpu.core.errors import ApplicationError
from labgpu.core.timeutils import now


@dataclass(frozen=True, slots=True)
class FreeWindow:
    start: datetime
    end: datetime
    # The member-limit refusal a booking of this window would get (None: none would).
    refused: ApplicationError | None = None


def member_free_windows(
    pool: NodePool,
    *,
    user: User,
    membership: Membership | None,
    duration: timedelta,
    after: datetime | None = None,
    count: int = 5,
    before: datetime | None = None,
    search: WindowSearch | None = None,
) -> list[FreeWindow]:
    """The pool's next `count` free windows of `duration` (ending by `before` when given), each
    with the refusal the member's own limits in `membership`'s lab would give it. Two statements
    at most beyond the window search: the member's bookings around the windows are read once,
    not per window."""
    windows = next_free_windows(
        pool, duration=duration, after=after, count=count, before=before, search=search
    )
    if (
        not windows
        or membership is None
        or (membership.max_hours_per_week is None and membership.max_concurrent_bookings is None)
    ):
        return [FreeWindow(start, end) for start, end in windows]
    first, last = windows[0][0], max(end for _, end in windows)
    # What snapshot.member_bookings_load reads for a booking (a week either side covers every
    # week a limit looks at), for all windows at once and without its lock: nothing is written.
    mine = list(
        Booking.objects.filter(
            user_id=user.pk,
            lab_id=membership.lab_id,
            status__in=[*Booking.LIVE_STATUSES, Booking.Status.COMPLETED],
            start__lt=last + timedelta(days=8),
            end__gt=first - timedelta(days=8),
        ).values_list("start", "end", "status")
    )
    moment = now()
    answer = []
    for start, end in windows:
        ask = Ask(
            user=user,
            lab=membership.lab,
            membership=membership,
            start=start,
            end=end,
            on_demand=False,
            moment=moment,
        )
        snap = BookingSnapshot(pool=pool, reserved=(start, end), blackouts=[], taken=[])
        snap.member_bookings = mine
        try:
            check_member_limits(ask, snap)
        except ApplicationError as refusal:
            answer.append(FreeWindow(start, end, refusal))
        else:
            answer.append(FreeWindow(start, end))
    return answer

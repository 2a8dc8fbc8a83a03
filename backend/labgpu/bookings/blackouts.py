"""Maintenance windows over bookings that already exist.

A blackout closes its pool to new bookings (`_check_times`), but one created over live bookings
leaves them as they are: the site admin decides, booking by booking, whether each is cancelled
(through the ordinary cancel, which audits it). Their owners are told at once.
"""

from django.db import transaction
from django.db.models import QuerySet

from labgpu.accounts.models import User
from labgpu.audit.services import audit_record
from labgpu.bookings import notifications
from labgpu.bookings.models import Booking
from labgpu.catalog.models import Blackout, NodePool


def blackout_clashes(blackout: Blackout) -> QuerySet[Booking]:
    """Live bookings of the blackout's pool that overlap it."""
    return (
        Booking.objects.filter(
            pool_id=blackout.pool_id,
            status__in=Booking.LIVE_STATUSES,
            start__lt=blackout.end,
            end__gt=blackout.start,
        )
        .select_related("user", "lab", "pool")
        .order_by("start", "id")
    )


@transaction.atomic
def blackout_create(
    *,
    actor: User,
    pool: NodePool,
    start,
    end,
    reason: str = "",  # type: ignore[no-untyped-def]
) -> tuple[Blackout, list[Booking]]:
    """Close `pool` for [start, end); returns the blackout and the live bookings it overlaps,
    whose owners are emailed once the blackout is committed."""
    blackout = Blackout.objects.create(pool=pool, start=start, end=end, reason=reason)
    clashes = list(blackout_clashes(blackout))
    audit_record(
        actor=actor,
        action="blackout.create",
        target=blackout,
        data={
            "pool": pool.pk,
            "start": start.isoformat(),
            "end": end.isoformat(),
            "reason": reason,
            "clashing_bookings": [booking.pk for booking in clashes],
        },
    )

    def tell_owners() -> None:
        for booking in clashes:
            notifications.booking_blackout_clash(booking, blackout=blackout)

    transaction.on_commit(tell_owners)
    return blackout, clashes

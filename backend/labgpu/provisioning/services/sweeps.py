"""Booking sweeps: beat finds bookings whose time has come and moves them along.

Scheduled bookings due (start − lead) get a node; bookings past their end start ending and their
nodes are drained; users are reminded before the end and warned when no region shows capacity.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction

from labgpu.accounts.models import Membership
from labgpu.audit.services import audit_record
from labgpu.bookings import notifications
from labgpu.bookings.models import Booking
from labgpu.core.crashpoints import crash_point
from labgpu.core.reasons import reason as stored_reason
from labgpu.core.timeutils import now
from labgpu.core.transitions import transition
from labgpu.providers import ProviderTransientError
from labgpu.provisioning.drivers import driver_for
from labgpu.provisioning.models import Node
from labgpu.provisioning.services.nodes import booking_complete_if_done, node_drain, node_request

logger = logging.getLogger(__name__)
BookingStatus = Booking.Status


def bookings_start_due(*, batch: int = 100) -> int:
    """Start provisioning for scheduled bookings whose start − lead has come."""
    moment = now()
    due = Booking.objects.filter(
        status=BookingStatus.SCHEDULED, reserved_start__lte=moment
    ).values_list("pk", flat=True)[:batch]
    return sum(booking_start(booking_id=pk) for pk in due)


@transaction.atomic
def booking_start(*, booking_id: int) -> bool:
    booking = Booking.objects.select_related("pool__instance_type__provider_account").get(
        pk=booking_id
    )
    if booking.end <= now():
        # Never provisioned (the workers were down through the whole booking): nothing to bill.
        transition(
            Booking,
            pk=booking.pk,
            from_statuses=[BookingStatus.SCHEDULED],
            to_status=BookingStatus.FAILED,
            failure_reason=stored_reason("The booking ended before a node could be provisioned."),
        )
        return False
    if not transition(
        Booking,
        pk=booking.pk,
        from_statuses=[BookingStatus.SCHEDULED],
        to_status=BookingStatus.PROVISIONING,
    ):
        return False
    crash_point("start.before_node_request")
    node_request(booking=booking, attempt=1)
    return True


def bookings_end_due(*, batch: int = 100) -> int:
    """Bookings whose end has come start ending; their nodes are torn down."""
    due = Booking.objects.filter(
        status__in=[BookingStatus.PROVISIONING, BookingStatus.READY], end__lte=now()
    ).values_list("pk", flat=True)[:batch]
    moved = 0
    for pk in due:
        moved += transition(
            Booking,
            pk=pk,
            from_statuses=[BookingStatus.PROVISIONING, BookingStatus.READY],
            to_status=BookingStatus.ENDING,
        )
        crash_point("end.after_ending")
    return moved


def bookings_wind_down(*, batch: int = 100) -> int:
    """For every ending booking: tear its nodes down, or complete it once they are gone."""
    ending = Booking.objects.filter(status=BookingStatus.ENDING).values_list("pk", flat=True)[
        :batch
    ]
    for pk in ending:
        booking_wind_down(booking_id=pk)
    return len(ending)


def booking_wind_down(*, booking_id: int) -> None:
    """Tear an ending booking's nodes down, or complete it once they are gone."""
    nodes = Node.objects.filter(booking_id=booking_id, status__in=Node.TEARDOWN_FROM)
    for node_id in nodes.values_list("pk", flat=True):
        node_drain(node_id=node_id)
        crash_point("wind_down.after_drain")
    booking_complete_if_done(booking_id=booking_id)


def bookings_remind_ending(*, minutes: int = 15, batch: int = 200) -> int:
    """Tell users 15 minutes before their node goes away (once per booking)."""
    moment = now()
    due = Booking.objects.filter(
        status=BookingStatus.READY,
        reminder_sent_at__isnull=True,
        end__lte=moment + timedelta(minutes=minutes),
        end__gt=moment,
    ).values_list("pk", flat=True)[:batch]
    sent = 0
    for pk in due:
        if Booking.objects.filter(pk=pk, reminder_sent_at__isnull=True).update(
            reminder_sent_at=moment
        ):
            notifications.booking_ending_soon(Booking.objects.get(pk=pk))
            sent += 1
    return sent


def bookings_check_capacity_ahead(*, batch: int = 200) -> int:
    """Warn the user and the lab's admins, once, when a booking starting within
    LABGPU_PREFLIGHT_S finds its size shown unavailable in every region its pool may use.
    One `GET /v2/sizes` per provider account per run. Returns how many bookings were warned."""
    moment = now()
    upcoming = list(
        Booking.objects.filter(
            status__in=[BookingStatus.SCHEDULED, BookingStatus.PENDING],
            capacity_warned_at__isnull=True,
            start__gt=moment,
            start__lte=moment + timedelta(seconds=settings.LABGPU_PREFLIGHT_S),
        ).select_related("pool__instance_type__provider_account", "user")[:batch]
    )
    sizes_by_account: dict[int, dict[str, set[str]]] = {}
    warned = 0
    for booking in upcoming:
        pool = booking.pool
        account = pool.instance_type.provider_account
        if account.pk not in sizes_by_account:
            try:
                with driver_for(account) as driver:
                    sizes_by_account[account.pk] = {
                        size.slug: set(size.regions) if size.available else set()
                        for size in driver.sizes()
                    }
            except ProviderTransientError as error:
                logger.warning("capacity check for account %s skipped: %s", account.pk, error)
                sizes_by_account[account.pk] = {}
        sizes = sizes_by_account[account.pk]
        if not sizes:
            continue  # nothing known: never warn on a failed check
        shown = sizes.get(pool.instance_type.provider_size, set())
        if shown & set(pool.regions):
            continue
        if not Booking.objects.filter(pk=booking.pk, capacity_warned_at__isnull=True).update(
            capacity_warned_at=moment
        ):
            continue
        admins = [
            m.user
            for m in Membership.objects.filter(
                lab_id=booking.lab_id, role=Membership.Role.LAB_ADMIN
            ).select_related("user")
        ]
        recipients = list({u.pk: u for u in [booking.user, *admins]}.values())
        notifications.booking_capacity_warning(booking, regions=pool.regions, recipients=recipients)
        audit_record(
            actor=None,
            action="booking.capacity_warning",
            target=booking,
            lab=booking.lab,
            data={"regions": pool.regions, "size": pool.instance_type.provider_size},
        )
        warned += 1
    return warned

"""Agent transitions: what the node agent's passing report (or the poll that learns the IP)
does to a node and its booking: hand it over once it is usable (I-5)."""

from django.db import transaction
from django.db.models import Q

from labgpu.bookings import notifications
from labgpu.bookings.models import Booking
from labgpu.core.crashpoints import crash_point
from labgpu.core.timeutils import now
from labgpu.core.transitions import transition
from labgpu.provisioning.models import Node

BookingStatus = Booking.Status
NodeStatus = Node.Status
# A node is handed over only with a droplet we know, its address and a passing report (I-5, I-8).
USABLE = ~Q(provider_id="") & Q(public_ip__isnull=False) & Q(passed_at__isnull=False)


def node_report_passed(*, node: Node) -> None:
    """A passing report: remember it, and hand the node over if it is usable (I-5)."""
    Node.objects.filter(pk=node.pk, passed_at__isnull=True).update(passed_at=now())
    crash_point("report.after_passed")
    node_ready_if_usable(node_id=node.pk)


def node_ready_if_usable(*, node_id: int) -> None:
    """Ready needs a known droplet, its IP and a passing report; whichever comes last (the report,
    or the poll that learns the IP) makes the node and its booking ready."""
    with transaction.atomic():
        if not transition(
            Node,
            pk=node_id,
            from_statuses=[NodeStatus.CHECKING, NodeStatus.BOOTING],
            to_status=NodeStatus.READY,
            condition=USABLE,
            ready_at=now(),
        ):
            return
        booking_id = Node.objects.values_list("booking_id", flat=True).get(pk=node_id)
        if transition(
            Booking,
            pk=booking_id,
            from_statuses=[BookingStatus.PROVISIONING],
            to_status=BookingStatus.READY,
        ):
            booking = Booking.objects.get(pk=booking_id)
            transaction.on_commit(lambda: notifications.booking_ready(booking))

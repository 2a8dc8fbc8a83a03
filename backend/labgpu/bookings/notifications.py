"""Emails to people about their bookings (console backend in development).

Sent after the transaction commits, in the recipient's language, with times in their time zone.
"""

import logging
import zoneinfo
from datetime import datetime

from django.core.mail import send_mail
from django.utils import translation
from django.utils.translation import gettext as _

from labgpu.bookings.models import Booking

logger = logging.getLogger(__name__)


def _local(moment: datetime, user) -> str:  # type: ignore[no-untyped-def]
    tz = zoneinfo.ZoneInfo(user.timezone or "UTC")
    return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M %Z")


def _send(user, subject: str, body: str) -> None:  # type: ignore[no-untyped-def]
    if not user.email:
        return
    try:
        send_mail(subject, body, None, [user.email])
    except Exception:  # a mail outage must never break the lifecycle
        logger.exception("could not email %s: %s", user.username, subject)


def ssh_command(booking: Booking) -> str | None:
    node = booking.nodes.filter(status="ready").order_by("-attempt").first()
    return node.ssh_command if node else None


def booking_decided(booking: Booking) -> None:
    user = booking.user
    with translation.override(user.language):
        if booking.status == Booking.Status.SCHEDULED:
            subject = _("Your booking #%(id)s was approved") % {"id": booking.pk}
        else:
            subject = _("Your booking #%(id)s was rejected") % {"id": booking.pk}
        body = _("%(pool)s, %(start)s – %(end)s. %(reason)s") % {
            "pool": booking.pool.name,
            "start": _local(booking.start, user),
            "end": _local(booking.end, user),
            "reason": booking.decision_reason,
        }
    _send(user, subject, body)


def booking_ready(booking: Booking) -> None:
    user = booking.user
    with translation.override(user.language):
        subject = _("Your GPU node for booking #%(id)s is ready") % {"id": booking.pk}
        body = _(
            "The node passed its health checks. Connect with:\n\n    %(ssh)s\n\n"
            "It runs until %(end)s."
        ) % {
            "ssh": ssh_command(booking) or "-",
            "end": _local(booking.end, user),
        }
    _send(user, subject, body)


def booking_ending_soon(booking: Booking) -> None:
    user = booking.user
    with translation.override(user.language):
        subject = _("Booking #%(id)s ends at %(end)s") % {
            "id": booking.pk,
            "end": _local(booking.end, user),
        }
        body = _(
            "Save your work: the node is destroyed when the booking ends. "
            "You can extend the booking while capacity and quota allow."
        )
    _send(user, subject, body)


def booking_failed(booking: Booking) -> None:
    user = booking.user
    with translation.override(user.language):
        subject = _("Booking #%(id)s failed") % {"id": booking.pk}
        body = _(
            "We could not give you a healthy node: %(reason)s\n"
            "You are not charged for failed nodes."
        ) % {"reason": booking.failure_reason}
    _send(user, subject, body)


def quota_threshold(*, lab, instance_type, month, percent: int, recipients) -> None:  # type: ignore[no-untyped-def]
    for user in recipients:
        with translation.override(user.language):
            subject = _("%(lab)s has used %(percent)s%% of its %(type)s quota for %(month)s") % {
                "lab": lab.name,
                "percent": percent,
                "type": instance_type.name,
                "month": month.strftime("%Y-%m"),
            }
            body = _("Lab admins can request more quota in LabGPU.")
        _send(user, subject, body)


def booking_capacity_warning(booking: Booking, *, regions: list[str], recipients) -> None:  # type: ignore[no-untyped-def]
    """Ahead of the start, no region the pool may use shows the size available."""
    for user in recipients:
        with translation.override(user.language):
            subject = _("Booking #%(id)s: no GPU capacity in sight yet") % {"id": booking.pk}
            body = _(
                "Your booking starts at %(start)s. The provider shows no %(size)s available in "
                "%(regions)s right now. We keep trying from the provisioning time on; if no region "
                "has capacity shortly after the start, the booking fails and nothing is charged."
            ) % {
                "start": _local(booking.start, user),
                "size": booking.pool.instance_type.provider_size,
                "regions": ", ".join(regions),
            }
        _send(user, subject, body)

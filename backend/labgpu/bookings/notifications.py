"""Emails to people about their bookings (console backend in development), the app's
notification list, and chat channels (labgpu.chat: the user's own and their lab's channels that
subscribe to the event, each in the channel's language).

Sent after the transaction commits, in the recipient's language, with times in their time zone
named unambiguously (the IANA name and the UTC offset: "CST" is China to some readers and the US
Central zone to others), and with a link to the booking in the web app.
"""

import logging
import zoneinfo
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.utils import translation
from django.utils.translation import gettext as _

from labgpu.accounts.emails import verified_email
from labgpu.accounts.models import Membership
from labgpu.bookings.models import Booking, Notification
from labgpu.bookings.services.notebook import NOTEBOOK_PORT, notebook_access
from labgpu.chat.services import chat_notify
from labgpu.core.errors import ApplicationError
from labgpu.core.reasons import reason_in_language
from labgpu.core.timeutils import now

logger = logging.getLogger(__name__)


def local_time(moment: datetime, user) -> str:  # type: ignore[no-untyped-def]
    """`2026-12-01 15:00 (Asia/Shanghai, UTC+08:00)` in the user's zone (call inside the
    recipient's language: the wrapping is translated)."""
    name = user.timezone or "UTC"
    local = moment.astimezone(zoneinfo.ZoneInfo(name))
    offset = local.strftime("%z")  # +0800
    return _("%(time)s (%(zone)s, UTC%(offset)s)") % {
        "time": local.strftime("%Y-%m-%d %H:%M"),
        "zone": name,
        "offset": f"{offset[:3]}:{offset[3:]}",
    }


def booking_url(booking: Booking) -> str:
    return f"{settings.LABGPU_PUBLIC_URL.rstrip('/')}/bookings/{booking.pk}"


def _with_link(body: str, booking: Booking) -> str:
    return body + "\n\n" + _("Open the booking: %(url)s") % {"url": booking_url(booking)}


def _send(  # type: ignore[no-untyped-def]
    user, subject: str, body: str, booking: Booking | None = None
) -> None:
    """E-mail `user` and keep the message for the app's notification list."""
    try:
        Notification.objects.create(user=user, booking=booking, subject=subject[:300], body=body)
    except Exception:  # like the mail: a notification must never break the lifecycle
        logger.exception("could not record a notification for %s: %s", user.username, subject)
    address = verified_email(user)  # an unproved address may be a stranger's
    if not address:
        return
    try:
        send_mail(subject, body, None, [address])
    except Exception:  # a mail outage must never break the lifecycle
        logger.exception("could not email %s: %s", user.username, subject)


def notify_person(  # type: ignore[no-untyped-def]
    user, subject: str, body: str, booking: Booking | None = None
) -> None:
    """A message for `user` (about `booking`, if any): mailed and kept in their list."""
    _send(user, subject, body, booking)


def _chat(event: str, booking: Booking, *, to_lab: bool = False, **context: object) -> None:
    """Post `event` about `booking` to its owner's chat channels (and its lab's with `to_lab`)."""
    chat_notify(
        event,
        user=booking.user,
        lab=booking.lab if to_lab else None,
        context={
            "booking_id": booking.pk,
            "pool": booking.pool.name,
            "start": booking.start,
            "end": booking.end,
            "url": booking_url(booking),
            **context,
        },
    )


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
            "start": local_time(booking.start, user),
            "end": local_time(booking.end, user),
            "reason": booking.decision_reason,
        }
        body = _with_link(body, booking)
    _send(user, subject, body, booking)
    _chat(
        "booking_decided",
        booking,
        approved=booking.status == Booking.Status.SCHEDULED,
        reason=booking.decision_reason,
    )


def booking_approval_needed(booking: Booking) -> None:
    """A booking waits for a lab admin: the lab's chat channels and each of its lab admins' own
    channels hear of it, each message in its channel's language (the approval queue and its badge
    are the in-app signal). The one who asked is not asked to approve their own booking unless
    LABGPU_ALLOW_SELF_APPROVAL lets them."""
    context = {
        "booking_id": booking.pk,
        "user": booking.user.get_full_name() or booking.user.username,
        "pool": booking.pool.name,
        "start": booking.start,
        "end": booking.end,
        "url": booking_url(booking),
    }
    chat_notify("approval_needed", lab=booking.lab, context=context)
    admins = Membership.objects.filter(
        lab_id=booking.lab_id, role=Membership.Role.LAB_ADMIN, user__is_active=True
    ).select_related("user")
    for membership in admins:
        if membership.user_id == booking.user_id and not settings.LABGPU_ALLOW_SELF_APPROVAL:
            continue
        chat_notify("approval_needed", user=membership.user, context=context)


def booking_extension_decided(booking: Booking, *, approved: bool, reason: str) -> None:
    user = booking.user
    with translation.override(user.language):
        if approved:
            subject = _("Your booking #%(id)s was extended") % {"id": booking.pk}
        else:
            subject = _("Your booking #%(id)s was not extended") % {"id": booking.pk}
        body = _("%(pool)s, %(start)s – %(end)s. %(reason)s") % {
            "pool": booking.pool.name,
            "start": local_time(booking.start, user),
            "end": local_time(booking.end, user),
            "reason": reason,
        }
        body = _with_link(body, booking)
    _send(user, subject, body, booking)


def booking_ready(booking: Booking) -> None:
    user = booking.user
    with translation.override(user.language):
        subject = _("Your GPU node for booking #%(id)s is ready") % {"id": booking.pk}
        body = _(
            "The node passed its health checks. Connect with:\n\n    %(ssh)s\n\n"
            "It runs until %(end)s."
        ) % {
            "ssh": ssh_command(booking) or "-",
            "end": local_time(booking.end, user),
        }
        body = _with_link(body, booking)
    _send(user, subject, body, booking)
    _chat(
        "booking_ready",
        booking,
        ssh=ssh_command(booking) or "-",
        notebook_tunnel=_notebook_tunnel(booking),
    )


def _notebook_tunnel(booking: Booking) -> str:
    """The SSH tunnel to the booking's JupyterLab ("" without one). Chat gets the tunnel, never
    the URL: the token in it is for the owner's eyes in LabGPU only."""
    if not booking.jupyter:
        return ""
    try:
        access = notebook_access(user=booking.user, booking=booking, local_port=NOTEBOOK_PORT)
    except ApplicationError:
        return ""
    return access.tunnel_command or ""


def booking_ending_soon(booking: Booking) -> None:
    user = booking.user
    with translation.override(user.language):
        subject = _("Booking #%(id)s ends at %(end)s") % {
            "id": booking.pk,
            "end": local_time(booking.end, user),
        }
        body = _(
            "Save your work: the node is destroyed when the booking ends. "
            "You can extend the booking while capacity and quota allow."
        )
        body = _with_link(body, booking)
    _send(user, subject, body, booking)
    _chat("booking_ending_soon", booking)


def booking_idle_warning(booking: Booking, *, ends_at: datetime) -> None:
    """The pool's idle policy: the node's GPUs sat idle with no SSH session for a while."""
    user = booking.user
    with translation.override(user.language):
        subject = _("Booking #%(id)s looks idle") % {"id": booking.pk}
        body = _(
            "The GPUs of your node have been idle with no SSH session. Unless it is used again "
            'or you press "Keep" on the booking, it ends at %(end)s and frees its GPUs for '
            "others."
        ) % {"end": local_time(ends_at, user)}
        body = _with_link(body, booking)
    _send(user, subject, body, booking)
    _chat("idle_warning", booking, idle_minutes=booking.pool.idle_reclaim_minutes, ends_at=ends_at)


def booking_idle_ended(booking: Booking) -> None:
    user = booking.user
    with translation.override(user.language):
        subject = _("Booking #%(id)s ended early: idle") % {"id": booking.pk}
        body = _(
            "The GPUs of your node stayed idle with no SSH session after the warning, so the "
            "booking ended early and its GPUs went back to the lab. You are charged only up "
            "to now."
        )
        body = _with_link(body, booking)
    _send(user, subject, body, booking)


def booking_failed(booking: Booking) -> None:
    user = booking.user
    with translation.override(user.language):
        subject = _("Booking #%(id)s failed") % {"id": booking.pk}
        body = _(
            "We could not give you a healthy node: %(reason)s\n"
            "You are not charged for failed nodes."
        ) % {"reason": reason_in_language(booking.failure_reason)}
        body = _with_link(body, booking)
    _send(user, subject, body, booking)
    _chat("booking_failed", booking, to_lab=True, reason=booking.failure_reason)


def booking_node_replaced(booking: Booking, *, reason: str) -> None:
    """A node failed and a replacement is on its way: chat only (the e-mail comes when it is
    ready, or when the booking fails)."""
    _chat("booking_failed", booking, reason=reason, replaced=True)


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
    context = {
        "lab": lab.name,
        "percent": percent,
        "instance_type": instance_type.name,
        "month": month.strftime("%Y-%m"),
    }
    # The lab's channels, and each recipient's (its lab admins') own, like approval_needed.
    chat_notify("quota_threshold", lab=lab, context=context)
    for user in recipients:
        chat_notify("quota_threshold", user=user, context=context)


def _period_text(start: datetime, end: datetime) -> str:
    last = end - timedelta(days=1)
    if start.day == 1 and end.day == 1 and last.month == start.month:
        return start.strftime("%Y-%m")
    return f"{start:%Y-%m-%d} – {last:%Y-%m-%d}"


def budget_threshold(  # type: ignore[no-untyped-def]
    *, lab, scope: str, percent: int, amount, currency: str, period_start, period_end, recipients
) -> None:
    """A budget period reached 50, 80 or 100 % (consumed + forecast + committed; once each)."""
    period = _period_text(period_start, period_end)
    for user in recipients:
        with translation.override(user.language):
            subject = _("%(scope)s has reached %(percent)s%% of its budget for %(period)s") % {
                "scope": scope,
                "percent": percent,
                "period": period,
            }
            body = _(
                "Consumed, running and booked GPU time comes to %(percent)s%% of "
                "%(amount)s %(currency)s. Lab admins can raise the budget in LabGPU."
            ) % {"percent": percent, "amount": amount, "currency": currency}
        _send(user, subject, body)
    context = {
        "lab": lab.name,
        "scope": scope,
        "percent": percent,
        "amount": str(amount),
        "currency": currency,
        "period": period,
    }
    chat_notify("budget_threshold", lab=lab, context=context)
    for user in recipients:
        chat_notify("budget_threshold", user=user, context=context)


def volume_near_full(  # type: ignore[no-untyped-def]
    *, volume: str, region: str, size_gb: int, percent: int, lab, recipients
) -> None:
    """A persistent volume crossed LABGPU_VOLUME_NEAR_FULL_PCT (once per crossing)."""
    for person in recipients:
        with translation.override(person.language):
            subject = _("Volume %(volume)s is %(percent)s%% full") % {
                "volume": volume,
                "percent": percent,
            }
            body = _("%(size)s GB in %(region)s. Delete data or ask a lab admin for more.") % {
                "size": size_gb,
                "region": region,
            }
        _send(person, subject, body)
    context = {"volume": volume, "used_percent": percent, "size_gb": size_gb, "region": region}
    # A lab's volume: the lab's channels, and each recipient's own (its admins', the user's).
    if lab is not None:
        chat_notify("volume_near_full", lab=lab, context=context)
    for person in recipients:
        chat_notify("volume_near_full", user=person, context=context)


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
                "start": local_time(booking.start, user),
                "size": booking.pool.instance_type.provider_size,
                "regions": ", ".join(regions),
            }
            body = _with_link(body, booking)
        _send(user, subject, body, booking)


def booking_blackout_clash(booking: Booking, *, blackout) -> None:  # type: ignore[no-untyped-def]
    """A site admin closed the pool for maintenance over this booking; it stays as it is until
    someone cancels it, so its owner hears of it at once."""
    user = booking.user
    with translation.override(user.language):
        subject = _("Booking #%(id)s overlaps maintenance of %(pool)s") % {
            "id": booking.pk,
            "pool": booking.pool.name,
        }
        body = _(
            "%(pool)s is closed for maintenance from %(start)s to %(end)s: %(reason)s\n"
            "Your booking runs from %(booking_start)s to %(booking_end)s. A site admin may cancel "
            "it; you can also cancel it and book another time."
        ) % {
            "pool": booking.pool.name,
            "start": local_time(blackout.start, user),
            "end": local_time(blackout.end, user),
            "reason": blackout.reason or "-",
            "booking_start": local_time(booking.start, user),
            "booking_end": local_time(booking.end, user),
        }
        body = _with_link(body, booking)
    _send(user, subject, body, booking)


def booking_moved(booking: Booking, *, old_start: datetime, old_end: datetime) -> None:
    """Someone else (a lab or site admin, e.g. around maintenance) moved the booking."""
    user = booking.user
    with translation.override(user.language):
        subject = _("Booking #%(id)s was moved") % {"id": booking.pk}
        body = _(
            "Your booking in %(pool)s was moved from %(old_start)s – %(old_end)s "
            "to %(start)s – %(end)s."
        ) % {
            "pool": booking.pool.name,
            "old_start": local_time(old_start, user),
            "old_end": local_time(old_end, user),
            "start": local_time(booking.start, user),
            "end": local_time(booking.end, user),
        }
        body = _with_link(body, booking)
    _send(user, subject, body, booking)


def notification_mark_read(  # type: ignore[no-untyped-def]
    *, user, notification_id: int | None = None
) -> int:
    """Mark one of `user`'s notifications read (all of them when no id); returns how many moved.
    Only unread ones are touched, so reading twice keeps the first time."""
    unread = Notification.objects.filter(user=user, read_at__isnull=True)
    if notification_id is not None:
        unread = unread.filter(pk=notification_id)
    return unread.update(read_at=now())


def series_approval_needed(series, pending: list[Booking]) -> None:  # type: ignore[no-untyped-def]
    """A series' pending occurrences wait for one decision: its lab admins are mailed once (not
    once per occurrence) and the lab's chat hears of it, from the first start to the last end."""
    first, last = pending[0], pending[-1]
    context = {
        "booking_id": first.pk,
        "user": first.user.get_full_name() or first.user.username,
        "pool": first.pool.name,
        "start": first.start,
        "end": last.end,
        "url": booking_url(first),
    }
    chat_notify("approval_needed", lab=first.lab, context=context)
    admins = Membership.objects.filter(
        lab_id=first.lab_id, role=Membership.Role.LAB_ADMIN, user__is_active=True
    ).select_related("user")
    for membership in admins:
        admin = membership.user
        if admin.pk == first.user_id and not settings.LABGPU_ALLOW_SELF_APPROVAL:
            continue
        with translation.override(admin.language):
            subject = _("A series of %(count)s bookings waits for your approval") % {
                "count": len(pending)
            }
            body = _("%(user)s, %(pool)s, %(start)s – %(end)s. %(refused)s refused.") % {
                "user": context["user"],
                "pool": first.pool.name,
                "start": local_time(first.start, admin),
                "end": local_time(last.end, admin),
                "refused": len(series.refused),
            }
            body = _with_link(body, first)
        _send(admin, subject, body, first)


def series_decided(series, *, approved: bool, count: int) -> None:  # type: ignore[no-untyped-def]
    user = series.user
    first = series.bookings.order_by("start").first()
    with translation.override(user.language):
        if approved:
            subject = _("Your series of %(count)s bookings was approved") % {"count": count}
        else:
            subject = _("Your series of %(count)s bookings was rejected") % {"count": count}
        body = _("%(pool)s, from %(start)s.") % {
            "pool": series.pool.name,
            "start": local_time(series.first_start, user),
        }
        if first is not None:
            body = _with_link(body, first)
    _send(user, subject, body, first)

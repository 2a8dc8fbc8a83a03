"""Live utilisation and idle reclaim (issue 15, item 2).

Each heartbeat of a ready node adds (at most every `LABGPU_UTILISATION_SAMPLE_MIN_S`) one bounded
sample for the booking's charts and folds the interval into the booking's totals
(`usage.BookingUtilisation`). A pool with an idle policy has its idle ready bookings swept by a
beat task: warned once after `idle_reclaim_minutes` without use, ended early `idle_grace_minutes`
after the warning unless used again or kept. Both steps are conditional UPDATEs, so the sweep is
safe to run twice or to kill half way.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils.translation import gettext as _

from labgpu.audit.services import audit_record
from labgpu.bookings import notifications
from labgpu.bookings.models import Booking
from labgpu.bookings.selectors import booking_changeable_by
from labgpu.core.errors import Conflict, NotPermitted
from labgpu.core.outbox import enqueue_on_commit
from labgpu.core.reasons import reason as stored_reason
from labgpu.core.timeutils import now
from labgpu.core.transitions import transition
from labgpu.health.limits import Usage
from labgpu.health.models import UtilisationSample
from labgpu.provisioning.models import Node
from labgpu.usage.models import BookingUtilisation

logger = logging.getLogger(__name__)

WIND_DOWN_TASK = "labgpu.provisioning.tasks.wind_down_booking"
# A GPU below this utilisation with no process on it counts as idle (drivers report 0–3 % noise).
GPU_BUSY_PCT = 5.0


def usage_is_active(usage: Usage) -> bool:
    """In use: any GPU busy, any process on a GPU, or anyone logged in over SSH."""
    return (
        any(float(g.get("utilisation_pct", 0)) >= GPU_BUSY_PCT for g in usage.gpus)
        or bool(usage.gpu_processes)
        or bool(usage.ssh_sessions)
    )


def policy_minutes(minutes: int) -> timedelta:
    """A policy's minutes as time; `LABGPU_IDLE_MINUTE_S` shrinks them for tests and the demo."""
    return timedelta(seconds=minutes * float(settings.LABGPU_IDLE_MINUTE_S))


def _gap_cap_s() -> float:
    """The longest interval one heartbeat may account for: a silent agent adds no time."""
    return 3.0 * float(settings.LABGPU_HEARTBEAT_INTERVAL_S)


@transaction.atomic
def utilisation_record(*, node: Node, usage: Usage) -> UtilisationSample | None:
    """Fold one heartbeat's usage into its booking's totals; store a chart sample when the last
    is at least `LABGPU_UTILISATION_SAMPLE_MIN_S` old. Only a ready node's heartbeats count."""
    if node.status != Node.Status.READY:
        return None
    moment = now()
    totals, _ = BookingUtilisation.objects.select_for_update().get_or_create(
        booking_id=node.booking_id
    )
    active = usage_is_active(usage)
    utils = [float(g["utilisation_pct"]) for g in usage.gpus if "utilisation_pct" in g]
    mean = sum(utils) / len(utils) if utils else None
    fields = ["last_sample_at"]
    if totals.last_sample_at is not None:
        gap = min(max((moment - totals.last_sample_at).total_seconds(), 0.0), _gap_cap_s())
        totals.observed_s += gap
        totals.utilisation_s += gap * (mean or 0.0)
        if active:
            totals.active_s += gap
        fields += ["observed_s", "utilisation_s", "active_s"]
    if active or totals.last_active_at is None:
        # The first heartbeat starts the idle clock; use restarts it and lifts a warning.
        totals.last_active_at = moment
        fields.append("last_active_at")
        if active and totals.idle_warned_at is not None:
            totals.idle_warned_at = None
            fields.append("idle_warned_at")
    sample_due = (
        totals.last_sample_at is None
        or not UtilisationSample.objects.filter(
            node=node,
            at__gt=moment - timedelta(seconds=settings.LABGPU_UTILISATION_SAMPLE_MIN_S),
        ).exists()
    )
    totals.last_sample_at = moment
    totals.save(update_fields=fields)
    if not sample_due:
        return None
    vram = [float(g["vram_used_mib"]) for g in usage.gpus if "vram_used_mib" in g]
    power = [float(g["power_w"]) for g in usage.gpus if "power_w" in g]
    sample = UtilisationSample.objects.create(
        node=node,
        booking_id=node.booking_id,
        at=moment,
        gpus=usage.gpus,
        utilisation_pct=round(mean, 1) if mean is not None else None,
        vram_used_mib=round(sum(vram), 1) if vram else None,
        power_w=round(sum(power), 1) if power else None,
        gpu_processes=usage.gpu_processes,
        ssh_sessions=usage.ssh_sessions,
        active=active,
    )
    UtilisationSample.objects.filter(
        node=node, at__lt=moment - timedelta(seconds=settings.LABGPU_UTILISATION_RETENTION_S)
    ).delete()
    return sample


@transaction.atomic
def booking_keep(*, actor: Any, booking: Booking) -> BookingUtilisation:
    """The owner says the node is in use: lift the idle warning and restart the idle clock.

    Only a warned booking can be kept: a keep without a warning (or a second one) would restart
    the idle clock unasked, so it is refused and nothing is written."""
    if not booking_changeable_by(actor, booking):
        raise NotPermitted(_("You cannot keep this booking."), code="not_your_booking")
    if booking.status != Booking.Status.READY:
        raise Conflict(
            _("This booking is %(status)s: it cannot be kept.")
            % {"status": booking.get_status_display()},
            code="invalid_status",
        )
    moment = now()
    totals = BookingUtilisation.objects.select_for_update().filter(booking=booking).first()
    if totals is None or totals.idle_warned_at is None:
        raise Conflict(
            _("This booking has no idle warning to answer: it is not about to end."),
            code="not_idle_warned",
        )
    totals.kept_at = totals.last_active_at = moment
    totals.idle_warned_at = None
    totals.save(update_fields=["kept_at", "last_active_at", "idle_warned_at"])
    audit_record(actor=actor, action="booking.idle_keep", target=booking, lab=booking.lab)
    return totals


def _policy_bookings() -> Any:
    return Booking.objects.filter(
        status=Booking.Status.READY, pool__idle_reclaim_minutes__isnull=False
    )


def bookings_reclaim_idle(*, batch: int = 200) -> dict[str, int]:
    """Warn the owners of idle bookings, and end those idle past the grace period.

    Idle means: heartbeats still arrive (a silent agent is the lifecycle's business, not this
    one's), and none since `last_active_at` showed use. Each step is one conditional UPDATE."""
    moment = now()
    fresh = moment - timedelta(seconds=_gap_cap_s())
    warned = ended = 0
    candidates = (
        _policy_bookings()
        .filter(
            utilisation__last_sample_at__gte=fresh,
            utilisation__last_active_at__isnull=False,
        )
        .select_related("pool", "user", "lab", "utilisation")
        .order_by("pk")[:batch]
    )
    for booking in candidates:
        totals = booking.utilisation
        pool = booking.pool
        assert pool.idle_reclaim_minutes is not None  # filtered above
        idle_for = moment - totals.last_active_at
        if totals.idle_warned_at is None:
            if idle_for < policy_minutes(pool.idle_reclaim_minutes):
                continue
            if _warn(booking, totals, moment):
                warned += 1
        elif moment - totals.idle_warned_at >= policy_minutes(pool.idle_grace_minutes) and _end(
            booking, totals, moment
        ):
            ended += 1
    return {"warned": warned, "ended": ended}


@transaction.atomic
def _warn(booking: Booking, totals: BookingUtilisation, moment: datetime) -> bool:
    won = BookingUtilisation.objects.filter(
        pk=totals.pk, idle_warned_at__isnull=True, last_active_at=totals.last_active_at
    ).update(idle_warned_at=moment)
    if not won:
        return False  # used meanwhile, or another sweep warned first
    ends_at = moment + policy_minutes(booking.pool.idle_grace_minutes)
    audit_record(
        actor=None,
        action="booking.idle_warning",
        target=booking,
        lab=booking.lab,
        data={"idle_since": totals.last_active_at.isoformat(), "ends_at": ends_at.isoformat()},
    )
    transaction.on_commit(lambda: notifications.booking_idle_warning(booking, ends_at=ends_at))
    return True


@transaction.atomic
def _end(booking: Booking, totals: BookingUtilisation, moment: datetime) -> bool:
    # Still warned and unused since: the warning is the same one we read (not lifted and given
    # again), and no heartbeat showed use after it.
    still_idle = BookingUtilisation.objects.filter(
        pk=totals.pk,
        idle_warned_at=totals.idle_warned_at,
        last_active_at__lte=F("idle_warned_at"),
    ).exists()
    if not still_idle:
        return False
    minutes = round((moment - totals.last_active_at) / policy_minutes(1))
    reason = stored_reason(
        "Ended early: the GPUs were idle with no SSH session for %(minutes)s minutes.",
        minutes=minutes,
    )
    if not transition(
        Booking,
        pk=booking.pk,
        from_statuses=[Booking.Status.READY],
        to_status=Booking.Status.ENDING,
        condition=Q(end__gt=moment),
        ended_at=moment,
        end_reason=reason[:300],
    ):
        return False
    enqueue_on_commit(WIND_DOWN_TASK, booking.pk)
    audit_record(
        actor=None,
        action="booking.idle_reclaim",
        target=booking,
        lab=booking.lab,
        data={"reason": reason, "idle_since": totals.last_active_at.isoformat()},
    )
    booking.end_reason = reason
    transaction.on_commit(lambda: notifications.booking_idle_ended(booking))
    return True

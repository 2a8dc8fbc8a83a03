"""Lab admins decide pending bookings and extension requests; nobody deciding means expiry."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from labgpu.accounts.models import User
from labgpu.accounts.selectors import is_lab_admin
from labgpu.audit.services import audit_record
from labgpu.bookings import notifications
from labgpu.bookings.models import Booking
from labgpu.bookings.selectors import bookings_visible_to
from labgpu.bookings.services.changes import (
    EXTENDABLE,
    booking_lock,
    capacity_freed,
    extension_ask,
)
from labgpu.bookings.services.quota_alerts import quota_alerts_send
from labgpu.bookings.services.rules import budget_alerts_due, check_all, crosses_quota_alert
from labgpu.bookings.services.slots import place
from labgpu.bookings.services.snapshot import pool_lock, snapshot_load
from labgpu.budgets.services import budget_alerts_record
from labgpu.core.errors import ApplicationError, Conflict, NotPermitted
from labgpu.core.timeutils import now
from labgpu.core.transitions import transition

Status = Booking.Status


def _check_lab_admin(actor: User, booking: Booking) -> None:
    if not is_lab_admin(actor, booking.lab_id):
        raise NotPermitted(_("Only this lab's admins decide its bookings."), code="not_lab_admin")


def _check_not_own(actor: User, booking: Booking) -> None:
    if booking.user_id == actor.pk and not settings.LABGPU_ALLOW_SELF_APPROVAL:
        # Approval is a second pair of eyes on the lab's money; the one who asked is not it.
        raise NotPermitted(
            _("You cannot approve your own booking: another lab admin or a site admin decides it."),
            code="self_approval",
        )


def _decide(*, actor: User, booking: Booking, to_status: str, reason: str) -> Booking:
    _check_lab_admin(actor, booking)
    won = transition(
        Booking,
        pk=booking.pk,
        from_statuses=[Status.PENDING],
        to_status=to_status,
        decided_by=actor,
        decided_at=now(),
        decision_reason=reason,
    )
    booking.refresh_from_db()
    if not won:
        raise Conflict(
            _("This booking is %(status)s, not pending.")
            % {"status": booking.get_status_display()},
            code="already_decided",
        )
    return booking


def _is_extension_request(booking: Booking) -> bool:
    return booking.status != Status.PENDING and booking.pending_end is not None


@transaction.atomic
def booking_approve(*, actor: User, booking: Booking, reason: str = "") -> Booking:
    """Approve a pending booking, or the extension an approved booking waits for."""
    if _is_extension_request(booking):
        return _extension_decide(actor=actor, booking=booking, approve=True, reason=reason)
    if booking.status == Status.PENDING and booking.reserved_start <= now():
        booking_expire(booking_id=booking.pk)
        raise Conflict(_("Too late: the booking expired."), code="expired")
    _check_not_own(actor, booking)
    own = booking.user_id == actor.pk
    booking = _decide(actor=actor, booking=booking, to_status=Status.SCHEDULED, reason=reason)
    audit_record(
        actor=actor,
        action="booking.self_approve" if own else "booking.approve",
        target=booking,
        lab=booking.lab,
        data={"reason": reason, "self_approval": own},
    )
    transaction.on_commit(lambda: notifications.booking_decided(booking))
    return booking


@transaction.atomic
def booking_reject(*, actor: User, booking: Booking, reason: str) -> Booking:
    """Reject a pending booking (its slot is freed), or the extension an approved booking waits
    for (the booking keeps its approved end)."""
    if not reason.strip():
        raise ApplicationError(_("Say why you reject it."), code="reason_required", field="reason")
    if _is_extension_request(booking):
        return _extension_decide(actor=actor, booking=booking, approve=False, reason=reason)
    pool_lock(booking.pool_id)  # before the booking's row: its slot is freed (capacity_freed)
    booking = _decide(actor=actor, booking=booking, to_status=Status.REJECTED, reason=reason)
    capacity_freed(booking.pool_id)
    audit_record(
        actor=actor,
        action="booking.reject",
        target=booking,
        lab=booking.lab,
        data={"reason": reason},
    )
    transaction.on_commit(lambda: notifications.booking_decided(booking))
    return booking


def _extension_decide(*, actor: User, booking: Booking, approve: bool, reason: str) -> Booking:
    """Approving re-checks every rule for the asked end under the locks (the quota above all: it
    was not held while the request waited); rejecting gives back the held capacity."""
    _check_lab_admin(actor, booking)
    if approve:
        _check_not_own(actor, booking)
    pool = pool_lock(booking.pool_id, lab_id=booking.lab_id)
    booking_lock(booking)
    asked = booking.pending_end
    if asked is None or booking.status not in EXTENDABLE or booking.end <= now():
        raise Conflict(
            _("No extension of this booking waits for a decision."), code="already_decided"
        )
    data = {"from": booking.end.isoformat(), "to": asked.isoformat(), "reason": reason}
    if approve:
        ask = extension_ask(booking, asked)
        snap = snapshot_load(ask, pool)
        check_all(ask, snap)
        booking.slot = place(pool, snap.taken, snap.reserved, exclude_id=booking.pk)
        booking.end, booking.reserved_end = asked, snap.reserved[1]
        if crosses_quota_alert(ask, snap):
            transaction.on_commit(lambda: quota_alerts_send(booking=booking))
        budget_alerts_record(lab=booking.lab, due=budget_alerts_due(ask, snap))
    else:
        booking.reserved_end = booking.end + timedelta(minutes=pool.teardown_grace_minutes)
        capacity_freed(booking.pool_id)
    booking.pending_end = None
    booking.save(update_fields=["end", "pending_end", "reserved_end", "slot", "updated_at"])
    audit_record(
        actor=actor,
        action="booking.extension_approve" if approve else "booking.extension_reject",
        target=booking,
        lab=booking.lab,
        data=data,
    )
    transaction.on_commit(
        lambda: notifications.booking_extension_decided(booking, approved=approve, reason=reason)
    )
    return booking


@transaction.atomic
def booking_expire(*, booking_id: int) -> bool:
    """Expire a pending booking nobody decided before its provisioning had to begin."""
    pool_id = Booking.objects.filter(pk=booking_id).values_list("pool_id", flat=True).first()
    if pool_id is None:
        return False
    pool_lock(pool_id)  # before the booking's row: its slot is freed (capacity_freed)
    won = transition(
        Booking, pk=booking_id, from_statuses=[Status.PENDING], to_status=Status.EXPIRED
    )
    if won:
        booking = Booking.objects.select_related("lab").get(pk=booking_id)
        audit_record(actor=None, action="booking.expire", target=booking, lab=booking.lab)
        capacity_freed(booking.pool_id)
    return won


def bookings_expire_stale_pending(*, batch: int = 200) -> int:
    """Expire up to `batch` stale pending bookings; returns how many were expired."""
    stale = Booking.objects.filter(status=Status.PENDING, reserved_start__lte=now()).values_list(
        "pk", flat=True
    )[:batch]
    return sum(booking_expire(booking_id=pk) for pk in stale)


@dataclass(frozen=True)
class DecisionOutcome:
    """One booking of a bulk decision: decided (`booking`), or why not (`code`, `message`)."""

    id: int
    booking: Booking | None = None
    code: str = ""
    message: str = ""


MAX_BULK_DECISIONS = 100


def bookings_decide(
    *, actor: User, ids: list[int], approve: bool, reason: str = ""
) -> list[DecisionOutcome]:
    """Approve or reject several bookings (or their extension requests) with one reason.

    Each is decided on its own (its own transaction, its own audit entry and notification) by the
    same service a single decision uses, so one that fails (decided meanwhile, over quota, not
    this admin's lab) is reported and the others still go through.
    """
    if not ids:
        raise ApplicationError(_("Choose at least one booking."), code="required", field="ids")
    if len(ids) > MAX_BULK_DECISIONS:
        raise ApplicationError(
            _("At most %(limit)s bookings at once.") % {"limit": MAX_BULK_DECISIONS},
            code="too_many",
            field="ids",
        )
    if not approve and not reason.strip():
        raise ApplicationError(
            _("Say why you reject them."), code="reason_required", field="reason"
        )
    visible = {b.pk: b for b in bookings_visible_to(actor).filter(pk__in=ids)}
    outcomes = []
    for booking_id in dict.fromkeys(ids):
        booking = visible.get(booking_id)
        if booking is None:
            outcomes.append(
                DecisionOutcome(booking_id, code="not_found", message="No such booking.")
            )
            continue
        try:
            decide = booking_approve if approve else booking_reject
            decided = decide(actor=actor, booking=booking, reason=reason)
            outcomes.append(DecisionOutcome(booking_id, decided))
        except ApplicationError as e:
            outcomes.append(DecisionOutcome(booking_id, code=e.code, message=e.message))
    return outcomes

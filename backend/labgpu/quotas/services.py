from datetime import date, datetime
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import F

from labgpu.accounts.models import Lab, User
from labgpu.accounts.selectors import is_lab_admin
from labgpu.audit.services import audit_record
from labgpu.bookings.models import Booking
from labgpu.catalog.models import InstanceType
from labgpu.core.errors import ApplicationError, Conflict, NotPermitted
from labgpu.core.timeutils import month_bounds, month_start, next_month, now
from labgpu.core.transitions import transition
from labgpu.quotas.models import Quota, QuotaRequest
from labgpu.quotas.selectors import TWO_PLACES, booking_gpu_hours_in, quota_usage

QUOTA_ALERTS = (80, 100)


def months_touched(start: datetime, end: datetime) -> list[date]:
    months = [month_start(start)]
    while month_bounds(months[-1])[1] < end:
        months.append(next_month(months[-1]))
    return months


def quota_check_and_lock(*, booking: Booking, exclude_booking_id: int | None = None) -> bool:
    """Raise `quota_exceeded` unless every month `booking` touches has room for it; returns
    whether the booking crosses an alert threshold (QUOTA_ALERTS) not yet announced.

    Must run inside the transaction that writes the booking: the quota rows are locked FOR UPDATE
    so parallel bookings of one lab queue here instead of both seeing the same free hours (I-2).
    """
    instance_type_id = booking.pool.instance_type_id
    crosses_alert = False
    for month in months_touched(booking.start, booking.end):
        locked = list(
            Quota.objects.select_for_update().filter(
                lab_id=booking.lab_id, instance_type_id=instance_type_id, month=month
            )
        )
        usage = quota_usage(
            lab_id=booking.lab_id,
            instance_type_id=instance_type_id,
            month=month,
            exclude_booking_id=exclude_booking_id,
            quota=locked[0] if locked else None,
        )
        month_begin, month_end = month_bounds(month)
        needed = booking_gpu_hours_in(booking, month_begin, month_end).quantize(TWO_PLACES)
        if not locked or needed > usage.remaining:
            raise Conflict(
                f"Not enough quota for {month:%Y-%m}: {needed} GPU-hours needed, "
                f"{usage.remaining} remaining.",
                code="quota_exceeded",
                extra={
                    "month": month.isoformat(),
                    "needed_gpu_hours": str(needed),
                    "remaining_gpu_hours": str(usage.remaining),
                },
            )
        quota = locked[0]
        if quota.gpu_hours > 0:
            percent = (usage.used + usage.committed + needed) * 100 / quota.gpu_hours
            crosses_alert |= any(percent >= t > quota.notified_percent for t in QUOTA_ALERTS)
    return crosses_alert


def quota_notify_thresholds(*, booking: Booking) -> None:
    """Tell lab admins once when committed + used hours cross 80 % and 100 % of a month's quota."""
    from labgpu.accounts.models import Membership
    from labgpu.bookings import notifications

    for month in months_touched(booking.start, booking.end):
        quota = (
            Quota.objects.filter(
                lab_id=booking.lab_id, instance_type_id=booking.pool.instance_type_id, month=month
            )
            .select_related("lab", "instance_type")
            .first()
        )
        if quota is None or quota.gpu_hours <= 0:
            continue
        usage = quota_usage(
            lab_id=quota.lab_id, instance_type_id=quota.instance_type_id, month=month
        )
        percent = (usage.used + usage.committed) * 100 / quota.gpu_hours
        crossed = [t for t in QUOTA_ALERTS if percent >= t and quota.notified_percent < t]
        if not crossed:
            continue
        # CAS on the threshold: parallel bookings crossing it together send one email.
        if Quota.objects.filter(pk=quota.pk, notified_percent=quota.notified_percent).update(
            notified_percent=crossed[-1]
        ):
            admins = [
                m.user
                for m in Membership.objects.filter(
                    lab_id=quota.lab_id, role=Membership.Role.LAB_ADMIN
                ).select_related("user")
            ]
            notifications.quota_threshold(
                lab=quota.lab,
                instance_type=quota.instance_type,
                month=month,
                percent=crossed[-1],
                recipients=admins,
            )


@transaction.atomic
def quota_set(
    *, actor: User, lab: Lab, instance_type: InstanceType, month: date, gpu_hours: Decimal
) -> Quota:
    if not actor.is_site_admin:
        raise NotPermitted("Only site admins set quotas.", code="not_site_admin")
    quota, _ = Quota.objects.select_for_update().update_or_create(
        lab=lab,
        instance_type=instance_type,
        month=month_start(month),
        defaults={"gpu_hours": gpu_hours},
    )
    audit_record(
        actor=actor,
        action="quota.set",
        target=quota,
        lab=lab,
        data={"gpu_hours": str(gpu_hours), "month": quota.month.isoformat()},
    )
    return quota


@transaction.atomic
def quota_request_create(
    *,
    actor: User,
    lab: Lab,
    instance_type: InstanceType,
    month: date,
    gpu_hours: Decimal,
    reason: str = "",
) -> QuotaRequest:
    if not is_lab_admin(actor, lab.pk):
        raise NotPermitted("Only this lab's admins can request quota.", code="not_lab_admin")
    month = month_start(month)
    if month < month_start(now()):
        raise ApplicationError("That month is over.", code="month_in_past", field="month")
    if gpu_hours <= 0:
        raise ApplicationError("Ask for more than zero hours.", code="invalid", field="gpu_hours")
    request = QuotaRequest.objects.create(
        lab=lab,
        instance_type=instance_type,
        month=month,
        gpu_hours=gpu_hours,
        reason=reason,
        requested_by=actor,
    )
    audit_record(
        actor=actor,
        action="quota_request.create",
        target=request,
        lab=lab,
        data={"gpu_hours": str(gpu_hours), "month": month.isoformat()},
    )
    return request


def _decide(*, actor: User, request: QuotaRequest, to_status: str, reason: str) -> None:
    if not actor.is_site_admin:
        raise NotPermitted("Only site admins decide quota requests.", code="not_site_admin")
    won = transition(
        QuotaRequest,
        pk=request.pk,
        from_statuses=[QuotaRequest.Status.PENDING],
        to_status=to_status,
        decided_by=actor,
        decided_at=now(),
        decision_reason=reason,
    )
    if not won:
        raise Conflict("This request was already decided.", code="already_decided")


@transaction.atomic
def quota_request_approve(*, actor: User, request: QuotaRequest, reason: str = "") -> QuotaRequest:
    """Approve and add the requested hours to the month's quota (created when missing)."""
    _decide(actor=actor, request=request, to_status=QuotaRequest.Status.APPROVED, reason=reason)
    try:
        with transaction.atomic():
            quota, created = Quota.objects.get_or_create(
                lab_id=request.lab_id,
                instance_type_id=request.instance_type_id,
                month=request.month,
                defaults={"gpu_hours": request.gpu_hours},
            )
    except IntegrityError:  # created by a parallel approval a moment ago
        quota, created = (
            Quota.objects.get(
                lab_id=request.lab_id,
                instance_type_id=request.instance_type_id,
                month=request.month,
            ),
            False,
        )
    if not created:
        Quota.objects.filter(pk=quota.pk).update(gpu_hours=F("gpu_hours") + request.gpu_hours)
    request.refresh_from_db()
    audit_record(
        actor=actor,
        action="quota_request.approve",
        target=request,
        lab=request.lab,
        data={"gpu_hours": str(request.gpu_hours), "reason": reason},
    )
    return request


@transaction.atomic
def quota_request_reject(*, actor: User, request: QuotaRequest, reason: str) -> QuotaRequest:
    if not reason.strip():
        raise ApplicationError("Say why you reject it.", code="reason_required", field="reason")
    _decide(actor=actor, request=request, to_status=QuotaRequest.Status.REJECTED, reason=reason)
    request.refresh_from_db()
    audit_record(
        actor=actor,
        action="quota_request.reject",
        target=request,
        lab=request.lab,
        data={"reason": reason},
    )
    return request

from datetime import date
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils.translation import gettext as _

from labgpu.accounts.models import Lab, User
from labgpu.accounts.selectors import is_lab_admin
from labgpu.audit.services import audit_record
from labgpu.catalog.models import InstanceType
from labgpu.core.errors import ApplicationError, Conflict, NotPermitted
from labgpu.core.timeutils import month_start, now
from labgpu.core.transitions import transition
from labgpu.quotas.models import Quota, QuotaRequest


@transaction.atomic
def quota_set(
    *, actor: User, lab: Lab, instance_type: InstanceType, month: date, gpu_hours: Decimal
) -> Quota:
    if not actor.is_site_admin:
        raise NotPermitted(_("Only site admins set quotas."), code="not_site_admin")
    quota, _created = Quota.objects.select_for_update().update_or_create(
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
        raise NotPermitted(_("Only this lab's admins can request quota."), code="not_lab_admin")
    month = month_start(month)
    if month < month_start(now()):
        raise ApplicationError(_("That month is over."), code="month_in_past", field="month")
    if gpu_hours <= 0:
        raise ApplicationError(
            _("Ask for more than zero hours."), code="invalid", field="gpu_hours"
        )
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
        raise NotPermitted(_("Only site admins decide quota requests."), code="not_site_admin")
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
        raise Conflict(_("This request was already decided."), code="already_decided")


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
        raise ApplicationError(_("Say why you reject it."), code="reason_required", field="reason")
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

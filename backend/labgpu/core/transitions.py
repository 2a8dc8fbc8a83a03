"""Status changes as compare-and-swap UPDATEs, so two workers (or two admins) can never both win."""

from collections.abc import Iterable
from typing import Any

from django.db import models
from django.db.models import Q

from labgpu.audit.models import AuditEvent
from labgpu.core.timeutils import now


def transition(
    model: type[models.Model],
    *,
    pk: Any,
    from_statuses: Iterable[str],
    to_status: str,
    condition: Q | None = None,
    **fields: Any,
) -> bool:
    """Move row `pk` to `to_status` only if it is still in one of `from_statuses`.

    `condition` adds what else must hold at that instant (e.g. a node is ready only with an IP).
    Returns whether this caller won. The winner stamps `status_changed_at` and `updated_at` and
    appends the transition to the audit log (decisions add their own entry with actor and reason).
    """
    moment = now()
    rows = model._default_manager.filter(pk=pk, status__in=list(from_statuses))
    if condition is not None:
        rows = rows.filter(condition)
    moved = rows.update(status=to_status, status_changed_at=moment, updated_at=moment, **fields)
    if moved:
        AuditEvent.objects.create(
            action=f"{model._meta.model_name}.status.{to_status}",
            target_type=model._meta.label_lower,
            target_id=str(pk),
            data={"from": sorted(str(s) for s in from_statuses), "to": to_status},
        )
    return bool(moved)

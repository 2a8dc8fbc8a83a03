from typing import Any

from django.db import models

from labgpu.audit.models import AuditEvent
from labgpu.inserts import RowInsert

# AuditEvent.objects.create, the INSERT compiled once: every booking create writes one.
_AUDIT_INSERT = RowInsert(AuditEvent, prepared=True)


def audit_record(
    *,
    actor: Any,
    action: str,
    target: models.Model,
    lab: Any = None,
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one audit entry; call inside the transaction that made the change."""
    return _AUDIT_INSERT.create(
        actor=actor if getattr(actor, "pk", None) else None,
        action=action,
        target_type=target._meta.label_lower,
        target_id=str(target.pk),
        lab=lab,
        data=data or {},
    )

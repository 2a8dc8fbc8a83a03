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
    return _AUDIT_INSERT.create(**_entry(actor, action, target, lab, data))


def audit_entry(
    *,
    actor: Any,
    action: str,
    target: models.Model,
    lab: Any = None,
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    """The entry `audit_record` would append, not yet written: for a caller that writes many
    in one statement (`audit_record_all`)."""
    return AuditEvent(**_entry(actor, action, target, lab, data))


def audit_record_all(entries: list[AuditEvent]) -> list[AuditEvent]:
    """Append `entries` (audit_entry's) in one INSERT, in their order; call inside the
    transaction that made the changes (a series' occurrences: one row each)."""
    return AuditEvent.objects.bulk_create(entries) if entries else []


def _entry(
    actor: Any, action: str, target: models.Model, lab: Any, data: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "actor": actor if getattr(actor, "pk", None) else None,
        "action": action,
        "target_type": target._meta.label_lower,
        "target_id": str(target.pk),
        "lab": lab,
        "data": data or {},
    }

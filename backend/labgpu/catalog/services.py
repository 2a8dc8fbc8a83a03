"""Catalog writes: provider accounts, instance types and pools. Each change is audited.

Prices: a booking copies its instance type's `price_per_hour` when it is made, and metering
bills that copy, so changing a price affects bookings made from then on only; bookings already
made (and everything already metered) keep the price they were made at.
"""

from decimal import Decimal
from typing import Any

from django.db import models, transaction
from django.utils.translation import gettext as _

from labgpu.accounts.models import User
from labgpu.audit.services import audit_record
from labgpu.catalog.models import InstanceType, NodePool, ProviderAccount
from labgpu.catalog.signals import capacity_added
from labgpu.core.errors import NotPermitted
from labgpu.core.outbox import enqueue_on_commit


def _require_site_admin(actor: User) -> None:
    if not actor.is_site_admin:
        raise NotPermitted(_("Only site admins can change the catalog."), code="not_site_admin")


def _jsonable(value: Any) -> Any:
    if isinstance(value, models.Model):
        return value.pk
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (list, tuple, set)) or hasattr(value, "all"):
        items = value.all() if hasattr(value, "all") else value
        return [_jsonable(v) for v in items]
    return value


def _save(*, actor: User, instance: models.Model, fields: dict[str, Any], label: str) -> Any:
    """Create (`instance.pk` is None) or update `instance` with `fields`; audit what changed."""
    _require_site_admin(actor)
    creating = instance.pk is None
    many = {name: value for name, value in fields.items() if _is_m2m(instance, name)}
    plain = {name: value for name, value in fields.items() if name not in many}
    before = {} if creating else {name: _jsonable(getattr(instance, name)) for name in fields}
    for name, value in plain.items():
        setattr(instance, name, value)
    instance.full_clean(exclude=list(many))
    if creating:
        instance.save()
    else:
        instance.save(update_fields=[*plain, "updated_at"])
    for name, value in many.items():
        getattr(instance, name).set(value)
    after = {name: _jsonable(value) for name, value in fields.items()}
    changed = {
        name: {"from": before.get(name), "to": after[name]}
        for name in fields
        if creating or before.get(name) != after[name]
    }
    audit_record(
        actor=actor,
        action=f"{label}.{'create' if creating else 'update'}",
        target=instance,
        data={"changes": changed} if not creating else {"values": after},
    )
    return instance


def _is_m2m(instance: models.Model, name: str) -> bool:
    field = instance._meta.get_field(name)
    return bool(field.many_to_many)


@transaction.atomic
def provider_account_save(
    *, actor: User, account: ProviderAccount | None = None, **fields: Any
) -> ProviderAccount:
    return _save(
        actor=actor, instance=account or ProviderAccount(), fields=fields, label="provider_account"
    )


@transaction.atomic
def instance_type_save(
    *, actor: User, instance_type: InstanceType | None = None, **fields: Any
) -> InstanceType:
    """Create or change an instance type. A new price applies to bookings made from now on."""
    return _save(
        actor=actor, instance=instance_type or InstanceType(), fields=fields, label="instance_type"
    )


# The waitlist offers freed capacity (labgpu.waitlist, a higher app: enqueued by name).
WAITLIST_PROMOTE_TASK = "labgpu.waitlist.tasks.promote_waitlist"


@transaction.atomic
def pool_save(*, actor: User, pool: NodePool | None = None, **fields: Any) -> NodePool:
    """Create or change a pool; more capacity (or a pool opened again) goes to its waitlist."""
    before = (pool.capacity, pool.is_active) if pool is not None else None
    saved = _save(actor=actor, instance=pool or NodePool(), fields=fields, label="pool")
    if before is not None and (saved.capacity > before[0] or (saved.is_active and not before[1])):
        # Offered in this transaction (the waitlist receives the signal); the task is the
        # backstop when that promotion fails.
        capacity_added.send(sender=NodePool, pool_id=saved.pk)
        enqueue_on_commit(WAITLIST_PROMOTE_TASK, saved.pk)
    return saved

"""Status changes as compare-and-swap UPDATEs, so two workers (or two admins) can never both win."""

from collections.abc import Iterable
from typing import Any

from django.db import models

from labgpu.core.timeutils import now


def transition(
    model: type[models.Model],
    *,
    pk: Any,
    from_statuses: Iterable[str],
    to_status: str,
    **fields: Any,
) -> bool:
    """Move row `pk` to `to_status` only if it is still in one of `from_statuses`.

    Returns whether this caller won. Also stamps `status_changed_at` and `updated_at`.
    """
    moved = model._default_manager.filter(pk=pk, status__in=list(from_statuses)).update(
        status=to_status, status_changed_at=now(), updated_at=now(), **fields
    )
    return bool(moved)

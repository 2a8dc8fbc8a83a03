"""`Idempotency-Key` on booking creates: a retried request gets the booking the first one made."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _

from labgpu.accounts.models import User
from labgpu.bookings.models import Booking, IdempotencyKey
from labgpu.core.errors import ApplicationError
from labgpu.core.timeutils import now


def idempotency_fingerprint(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def idempotent_replay(user: User, key: str, fingerprint: str) -> Booking | None:
    """The booking an earlier request with `key` made (with what its answer shows), if any."""
    record = (
        IdempotencyKey.objects.filter(user=user, key=key)
        .select_related("booking__lab", "booking__user", "booking__pool")
        .first()
    )
    if record is None:
        return None
    if record.request_fingerprint != fingerprint:
        raise ApplicationError(
            _("This Idempotency-Key was used with a different request."),
            code="idempotency_key_reused",
            status_code=422,
        )
    return record.booking


def idempotency_keys_purge(*, batch: int = 1000) -> int:
    """Forget up to `batch` Idempotency-Keys older than LABGPU_IDEMPOTENCY_TTL_HOURS.

    A retry within the TTL still replays; afterwards the same key books anew (as Stripe's do).
    """
    cutoff = now() - timedelta(hours=settings.LABGPU_IDEMPOTENCY_TTL_HOURS)
    stale = list(
        IdempotencyKey.objects.filter(created_at__lt=cutoff)
        .order_by("created_at")
        .values_list("pk", flat=True)[:batch]
    )
    deleted, _ = IdempotencyKey.objects.filter(pk__in=stale).delete()
    return deleted

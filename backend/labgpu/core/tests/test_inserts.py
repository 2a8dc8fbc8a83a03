"""RowInsert (labgpu.inserts): the row it writes is the row `objects.create` writes."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction
from django.db.models import signals
from django.forms.models import model_to_dict

from labgpu.bookings.models import Booking, IdempotencyKey
from labgpu.inserts import RowInsert

START = datetime(2030, 1, 1, 10, tzinfo=UTC)


def _values(alice, vision_lab, pool, slot):
    return {
        "lab": vision_lab,
        "user": alice,
        "pool": pool,
        "start": START,
        "end": START + timedelta(hours=2),
        "reserved_start": START - timedelta(minutes=10),
        "reserved_end": START + timedelta(hours=2, minutes=5),
        "purpose": "training",
        "status": Booking.Status.SCHEDULED,
        "status_changed_at": START - timedelta(days=1),
        "slot": slot,
        "gpu_count": 8,
        "price_per_hour": Decimal("23.9200"),
    }


def _row(pk):
    return model_to_dict(Booking.objects.get(pk=pk), exclude=["id", "created_at", "updated_at"])


@pytest.mark.django_db
def test_row_insert_writes_the_row_create_writes(alice, vision_lab, pool):
    fast = RowInsert(Booking).create(**_values(alice, vision_lab, pool, slot=0))
    orm = Booking.objects.create(**_values(alice, vision_lab, pool, slot=1))
    assert fast.pk and not fast._state.adding and fast._state.db == "default"
    assert fast.created_at is not None and fast.updated_at is not None
    assert _row(fast.pk) == {**_row(orm.pk), "slot": 0}
    key = RowInsert(IdempotencyKey).create(
        user=alice, key="k-1", request_fingerprint="f", booking=fast
    )
    assert IdempotencyKey.objects.get(pk=key.pk).booking_id == fast.pk


@pytest.mark.django_db
def test_row_insert_raises_the_integrity_error_create_raises(alice, vision_lab, pool):
    """The exclusion constraint (one live booking per slot and period) refuses the second row."""
    RowInsert(Booking).create(**_values(alice, vision_lab, pool, slot=0))
    with pytest.raises(IntegrityError) as refused, transaction.atomic():
        RowInsert(Booking).create(**_values(alice, vision_lab, pool, slot=0))
    assert refused.value.__cause__.sqlstate == "23P01"


@pytest.mark.django_db
def test_row_insert_keeps_save_signals(alice, vision_lab, pool):
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance.slot)

    signals.post_save.connect(receiver, sender=Booking)
    try:
        RowInsert(Booking).create(**_values(alice, vision_lab, pool, slot=3))
    finally:
        signals.post_save.disconnect(receiver, sender=Booking)
    assert seen == [3]


@pytest.mark.django_db
def test_row_insert_keeps_a_models_own_save(alice, vision_lab, pool, monkeypatch):
    saved = []
    original = Booking.save

    def save(self, *args, **kwargs):
        saved.append(self.slot)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Booking, "save", save)
    booking = RowInsert(Booking).create(**_values(alice, vision_lab, pool, slot=2))
    assert saved == [2] and Booking.objects.filter(pk=booking.pk).exists()

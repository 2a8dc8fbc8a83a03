"""The ledger's writes. Provisioning calls them when a droplet is confirmed gone (I-8); the
ledger knows bookings but not nodes, so it takes the node's id and account, never the node."""

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction

from labgpu.bookings.models import Booking
from labgpu.pricing.selectors import price_spans, volume_spans
from labgpu.usage.models import StorageUsage, UsagePeriod, UsageRecord


def usage_record_price(record: UsageRecord) -> UsageRecord:
    """Cut `record` into periods at the prices in force while it ran; its cost is their sum."""
    spans = price_spans(record.instance_type_id, record.started_at, record.ended_at)
    UsagePeriod.objects.bulk_create(
        UsagePeriod(
            record=record,
            started_at=span.start,
            ended_at=span.end,
            seconds=span.seconds,
            price_per_hour=span.price_hourly,
            cost=span.cost,
        )
        for span in spans
    )
    record.cost = sum((span.cost for span in spans), Decimal(0))
    if spans:
        record.price_per_hour = spans[0].price_hourly.quantize(Decimal("0.0001"))
    UsageRecord.objects.filter(pk=record.pk).update(
        cost=record.cost, price_per_hour=record.price_per_hour
    )
    return record


@transaction.atomic
def usage_record_droplet(
    *,
    booking: Booking,
    node_id: int,
    provider_account_id: int,
    droplet_id: str,
    started_at: datetime,
    ended_at: datetime,
    charged: bool,
) -> UsageRecord:
    """The one usage record of droplet `droplet_id` (unique per provider account); a second call
    for the same droplet returns the first record unchanged."""
    record, created = UsageRecord.objects.get_or_create(
        provider_account_id=provider_account_id,
        droplet_id=droplet_id,
        defaults={
            "node_id": node_id,
            "booking": booking,
            "lab_id": booking.lab_id,
            "user_id": booking.user_id,
            "pool_id": booking.pool_id,
            "instance_type_id": booking.pool.instance_type_id,
            "started_at": started_at,
            "ended_at": ended_at,
            "seconds": max(0, int((ended_at - started_at).total_seconds())),
            "gpu_count": booking.gpu_count,
            "price_per_hour": booking.price_per_hour,
            "charged_to_lab": charged,
        },
    )
    if created:
        usage_record_price(record)
    return record


def booking_meter(*, booking: Booking) -> None:
    """Final usage of a booking: only nodes that served the lab count against quota and bill."""
    charged = [r for r in booking.usage_records.all() if r.charged_to_lab]
    gpu_hours = sum((r.gpu_hours for r in charged), Decimal(0))
    cost = sum((r.cost for r in charged), Decimal(0))
    Booking.objects.filter(pk=booking.pk).update(consumed_gpu_hours=gpu_hours, actual_cost=cost)


HOURS_PER_MONTH = Decimal(730)


def storage_record(
    *,
    volume: Any,
    lab_id: int,
    user_id: int | None,
    region: str,
    size_gb: int,
    since: datetime,
    until: datetime,
    price_gb_month: Decimal | None = None,
) -> StorageUsage | None:
    """Meter a volume's storage from its last record (or `since`) towards `until`: one record,
    up to the first volume price change or UTC month start (or `until`), at the price in force
    over it (`price_gb_month` given: that price, up to `until`); None once nothing is left.
    A caller repeats until None (labgpu.provisioning's meter_volume does)."""
    last = StorageUsage.objects.filter(volume=volume).order_by("-ended_at").first()
    start = max(since, last.ended_at) if last else since
    if until <= start:
        return None
    if price_gb_month is None:
        start, end, price = volume_spans(start, until)[0]
    else:
        end, price = until, price_gb_month
    hours = Decimal((end - start).total_seconds()) / 3600
    gb_months = Decimal(size_gb) * hours / HOURS_PER_MONTH
    record, _ = StorageUsage.objects.get_or_create(
        volume=volume,
        started_at=start,
        defaults={
            "lab_id": lab_id,
            "user_id": user_id,
            "region": region,
            "size_gb": size_gb,
            "ended_at": end,
            "gb_months": gb_months.quantize(Decimal("0.000001")),
            "cost": (gb_months * price).quantize(Decimal("0.000001")),
        },
    )
    return record

"""Usage metered before periods existed (backfilled by 0005 as one period per record) is cut by
0006 at every UTC month start and price change inside it, so each month's statement holds
exactly its seconds. Run with today's app registry over records made as 0005 found them; the
expected pieces are worked out by hand from the record's times and the prices."""

import importlib
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.apps import apps as today

from labgpu.bookings.tests.factories import BookingFactory
from labgpu.pricing.models import InstanceTypePrice, PriceSource
from labgpu.provisioning.tests.factories import NodeFactory
from labgpu.usage.models import UsagePeriod, UsageRecord

pytestmark = pytest.mark.django_db

BACKFILL = importlib.import_module("labgpu.usage.migrations.0005_usage_periods")
SPLIT = importlib.import_module("labgpu.usage.migrations.0006_split_backfilled_periods")


def _old_record(pool, start, seconds, price):
    """A record as it was before periods: cost and periods not yet written."""
    booking = BookingFactory(pool=pool, start=start, end=start + timedelta(seconds=seconds))
    node = NodeFactory(booking=booking, provider_account=pool.instance_type.provider_account)
    return UsageRecord.objects.create(
        node=node,
        provider_account=node.provider_account,
        droplet_id=f"old-{node.pk}",
        booking=booking,
        lab=booking.lab,
        user=booking.user,
        pool=pool,
        instance_type=pool.instance_type,
        started_at=start,
        ended_at=start + timedelta(seconds=seconds),
        seconds=seconds,
        gpu_count=1,
        price_per_hour=Decimal(price),
    )


def test_backfilled_usage_is_cut_at_month_starts_and_price_changes(pool):
    across = _old_record(pool, datetime(2026, 4, 30, 22, tzinfo=UTC), 5 * 3600 + 1234, "1.99")
    within = _old_record(pool, datetime(2026, 4, 10, 8, tzinfo=UTC), 3600, "1.99")
    InstanceTypePrice.objects.create(
        instance_type=pool.instance_type,
        effective_from=datetime(2026, 5, 1, 1, tzinfo=UTC),
        provider_price_hourly=Decimal("2.07"),
        price_hourly=Decimal("2.07"),
        source=PriceSource.SYNC,
    )
    BACKFILL._backfill(today, None)  # what 0005 did: one period each
    assert across.periods.count() == 1
    SPLIT.split_backfilled_periods(today, None)

    pieces = list(
        UsagePeriod.objects.filter(record=across)
        .order_by("started_at")
        .values_list("started_at", "seconds", "price_per_hour", "cost")
    )
    # April 30 22:00-24:00 at 1.99: 7200 s -> 3.98; May 1 00:00-01:00 at 1.99: 3600 s -> 1.99;
    # from 01:00 at 2.07: 8434 s × 2.07 / 3600 = 4.849... -> 4.85.
    assert pieces == [
        (datetime(2026, 4, 30, 22, tzinfo=UTC), 7200, Decimal("1.99"), Decimal("3.98")),
        (datetime(2026, 5, 1, tzinfo=UTC), 3600, Decimal("1.99"), Decimal("1.99")),
        (datetime(2026, 5, 1, 1, tzinfo=UTC), 8434, Decimal("2.07"), Decimal("4.85")),
    ]
    across.refresh_from_db()
    assert across.cost == Decimal("10.82")
    across.booking.refresh_from_db()
    assert across.booking.actual_cost == Decimal("10.82")
    # Within one month at one price: left as 0005 wrote it (3600 s at 1.99).
    assert list(within.periods.values_list("seconds", "cost")) == [(3600, Decimal("1.99"))]
    # Safe to run again: nothing more to cut.
    SPLIT.split_backfilled_periods(today, None)
    assert across.periods.count() == 3

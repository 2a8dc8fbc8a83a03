"""Prices from the provider: synced through the production driver from the emulator's
`GET /v2/sizes`, kept with their effective times, and each metered second priced at the price in
force when it ran (a change during a booking cuts its usage there)."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import httpx
import pytest

from labgpu.audit.models import AuditEvent
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.catalog.models import InstanceType, ProviderAccount
from labgpu.catalog.tests.factories import InstanceTypeFactory, NodePoolFactory
from labgpu.core.errors import ApplicationError, NotPermitted
from labgpu.pricing.models import InstanceTypePrice, PriceSource
from labgpu.pricing.selectors import cost_of_usage, price_of, price_spans
from labgpu.pricing.services import price_adjustment_set, prices_sync
from labgpu.provisioning.models import Node
from labgpu.usage.models import UsagePeriod, UsageRecord
from labgpu.usage.services import usage_record_droplet

pytestmark = pytest.mark.django_db

T0 = datetime(2030, 5, 31, 21, 0, tzinfo=UTC)


@pytest.fixture
def emulated(emulator, monkeypatch):
    monkeypatch.setenv("LABGPU_PROVIDER_TOKEN_EMU", "emulator-test-token")
    account = ProviderAccount.objects.create(
        name="Emulator",
        kind="emulator",
        api_base_url=emulator.url,
        token_env_var="LABGPU_PROVIDER_TOKEN_EMU",
    )
    h100 = InstanceTypeFactory(
        provider_account=account, provider_size="gpu-h100x1-80gb", price_per_hour=Decimal("9.99")
    )
    return emulator, account, h100


def test_sync_reads_the_providers_price_list_and_keeps_every_change_with_its_time(emulated, carol):
    emulator, _account, h100 = emulated
    listing = httpx.get(
        f"{emulator.url}/v2/sizes",
        params={"per_page": 200},
        headers={"Authorization": "Bearer emulator-test-token"},
    ).json()
    served = {s["slug"]: s for s in listing["sizes"]}
    listed = Decimal(str(served["gpu-h100x1-80gb"]["price_hourly"]))

    first = prices_sync(now=T0)
    assert [c["provider_size"] for c in first.changed] == ["gpu-h100x1-80gb"]
    rows = list(InstanceTypePrice.objects.filter(instance_type=h100).order_by("effective_from"))
    # The catalog's typed price stays in force for the time before the first sync.
    assert [(r.source, r.price_hourly) for r in rows] == [
        (PriceSource.CATALOG, Decimal("9.99")),
        (PriceSource.SYNC, listed),
    ]
    assert rows[1].effective_from == T0
    assert rows[1].provider_price_monthly == Decimal(
        str(served["gpu-h100x1-80gb"]["price_monthly"])
    )
    h100.refresh_from_db()
    assert h100.price_per_hour == listed  # new bookings' estimates start from it

    assert prices_sync(now=T0 + timedelta(hours=1)).changed == []  # unchanged: nothing written

    emulator.set_prices(**{"gpu-h100x1-80gb": {"price_hourly": 3.15, "price_monthly": 2116.8}})
    later = T0 + timedelta(hours=2)
    prices_sync(actor=carol, now=later)
    assert price_of(h100, at=later - timedelta(seconds=1)) == listed
    assert price_of(h100, at=later) == Decimal("3.15")  # exact: never through a float
    assert InstanceTypePrice.objects.filter(instance_type=h100).count() == 3
    event = AuditEvent.objects.filter(action="price.sync").latest("id")
    assert event.actor == carol and event.data["to"] == "3.15000"


def test_only_site_admins_sync_or_adjust(emulated, alice):
    _, _, h100 = emulated
    with pytest.raises(NotPermitted):
        prices_sync(actor=alice)
    with pytest.raises(NotPermitted):
        price_adjustment_set(actor=alice, instance_type=h100, adjustment_pct="-10")


def test_an_unreachable_provider_is_reported_and_prices_stay(emulated):
    _emulator, account, _h100 = emulated
    ProviderAccount.objects.filter(pk=account.pk).update(token_env_var="LABGPU_PROVIDER_TOKEN_NONE")
    result = prices_sync(now=T0)
    assert result.errors and "LABGPU_PROVIDER_TOKEN_NONE" in result.errors[0]
    assert not InstanceTypePrice.objects.exists()


def test_adjustment_applies_to_the_provider_price_from_now_and_is_audited(db, carol, instance_type):
    price_adjustment_set(actor=carol, instance_type=instance_type, adjustment_pct="-10", now=T0)
    assert price_of(instance_type, at=T0) == Decimal("1.79100")  # 1.99 − 10 %
    assert price_of(instance_type, at=T0 - timedelta(seconds=1)) == Decimal("1.99")
    event = AuditEvent.objects.get(action="price.adjustment")
    assert event.actor == carol and event.data["adjustment_pct"] == {"from": "0.00", "to": "-10.00"}
    for bad in ("-101", "abc", "NaN", "1.234"):
        with pytest.raises(ApplicationError) as err:
            price_adjustment_set(actor=carol, instance_type=instance_type, adjustment_pct=bad)
        assert "adjustment_pct" in err.value.extra["fields"]


def _set_price(instance_type: InstanceType, at: datetime, price: str) -> None:
    InstanceTypePrice.objects.create(
        instance_type=instance_type,
        effective_from=at,
        provider_price_hourly=Decimal(price),
        price_hourly=Decimal(price),
        source=PriceSource.SYNC,
    )


def test_a_price_change_during_a_booking_splits_its_usage_at_that_instant(
    alice, vision_lab, instance_type
):
    pool = NodePoolFactory(instance_type=instance_type)
    change = T0 + timedelta(hours=1, minutes=30)
    _set_price(instance_type, T0 - timedelta(days=1), "2.00")
    _set_price(instance_type, change, "3.00")
    booking = BookingFactory(
        lab=vision_lab,
        user=alice,
        pool=pool,
        start=T0,
        end=T0 + timedelta(hours=4),
        status="completed",
        price_per_hour=Decimal("2.00"),
    )
    node = Node.objects.create(
        booking=booking,
        attempt=1,
        provider_account=instance_type.provider_account,
        region="tor1",
        size="gpu-mi300x1-192gb",
        image="gpu-amd-base",
        status="destroyed",
    )
    start = T0 + timedelta(minutes=30)  # 21:30 on 31 May
    end = start + timedelta(hours=2, seconds=17)  # 23:30:17, across the change at 22:30
    record = usage_record_droplet(
        booking=booking,
        node_id=node.pk,
        provider_account_id=node.provider_account_id,
        droplet_id="777",
        started_at=start,
        ended_at=end,
        charged=True,
    )
    periods = list(UsagePeriod.objects.filter(record=record).order_by("started_at"))
    assert [(p.started_at, p.ended_at, p.seconds, p.price_per_hour) for p in periods] == [
        (start, change, 3600, Decimal("2.00000")),
        (change, end, 3617, Decimal("3.00000")),
    ]
    # Independently: 1 h at $2 + 3617 s at $3/h = 2.00 + 3.014166… → 5.01
    record.refresh_from_db()
    assert record.cost == Decimal("5.01")
    assert sum(p.seconds for p in periods) == record.seconds == 7217


def test_usage_across_a_month_start_is_cut_there(instance_type):
    _set_price(instance_type, T0 - timedelta(days=1), "2.00")
    start, end = T0, T0 + timedelta(hours=5)  # 21:00 on 31 May to 02:00 on 1 June (UTC)
    spans = price_spans(instance_type, start, end)
    assert [(s.start, s.seconds) for s in spans] == [
        (start, 3 * 3600),
        (datetime(2030, 6, 1, tzinfo=UTC), 2 * 3600),
    ]
    assert cost_of_usage(instance_type, start, end) == Decimal("10.00")


def test_records_and_periods_agree_with_an_independent_sum(alice, vision_lab, instance_type):
    """Many droplets across three price changes: each record's cost equals a sum computed here
    from the price list alone (second by hour bucket), to the cent."""
    pool = NodePoolFactory(instance_type=instance_type)
    prices = [
        (T0 - timedelta(days=1), "2.00"),
        (T0 + timedelta(hours=2), "2.75"),
        (T0 + timedelta(hours=5, minutes=13, seconds=7), "1.50"),
    ]
    for at, price in prices:
        _set_price(instance_type, at, price)
    booking = BookingFactory(
        lab=vision_lab,
        user=alice,
        pool=pool,
        start=T0,
        end=T0 + timedelta(hours=9),
        status="completed",
    )

    def price_at(t):
        return Decimal([p for at, p in prices if at <= t][-1])

    for i, (offset_s, length_s) in enumerate([(0, 7200), (1800, 16000), (7199, 2), (100, 30000)]):
        node = Node.objects.create(
            booking=booking,
            attempt=i + 1,
            provider_account=instance_type.provider_account,
            region="tor1",
            size="s",
            image="i",
            status="destroyed",
        )
        start = T0 + timedelta(seconds=offset_s)
        record = usage_record_droplet(
            booking=booking,
            node_id=node.pk,
            provider_account_id=node.provider_account_id,
            droplet_id=str(900 + i),
            started_at=start,
            ended_at=start + timedelta(seconds=length_s),
            charged=True,
        )
        # Independent: walk the seconds, group them by price and by month, round each group.
        groups: dict[tuple, int] = {}
        for k in range(length_s):
            t = start + timedelta(seconds=k)
            key = (price_at(t), t.month)
            groups[key] = groups.get(key, 0) + 1
        expected = sum(
            (
                (Decimal(n) * price / 3600).quantize(Decimal("0.01"), rounding="ROUND_HALF_UP")
                for (price, _), n in groups.items()
            ),
            Decimal(0),
        )
        record.refresh_from_db()
        assert record.cost == expected, (i, record.cost, expected)
    assert UsageRecord.objects.count() == 4

"""What things cost. The seam budgets, usage and statements share: every amount is USD as a
Decimal, every span of time is priced at the price in force while it ran.

    price_of(instance_type, at=t)                   -> Decimal  USD per droplet-hour at t
    price_spans(instance_type, start, end)          -> [PricedSpan] split at each price change
                                                       and at each UTC month start
    cost_of_usage(instance_type, start, end)        -> Decimal  USD, to the cent
    volume_price_of(at=t)                           -> Decimal  USD per GB-month at t
    volume_cost(size_gb, start, end)                -> Decimal  USD (6 places; a statement rounds)

Before an instance type has a price row its catalog price (`InstanceType.price_per_hour`) is in
force; pricing writes that as the first row on its first sync, so history never moves.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.utils import timezone

from labgpu.catalog.models import InstanceType
from labgpu.pricing.models import DisplayCurrency, InstanceTypePrice, VolumePrice

CENT = Decimal("0.01")
HOURS_PER_MONTH = Decimal(730)  # DigitalOcean's month for per-GB-month prices


def to_cents(amount: Decimal) -> Decimal:
    """Round half up to the cent, the one rounding rule for an amount someone is charged."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class PricedSpan:
    start: datetime
    end: datetime
    seconds: int
    price_hourly: Decimal

    @property
    def cost(self) -> Decimal:
        """This span's charge to the cent: seconds × hourly price / 3600, rounded once."""
        return to_cents(Decimal(self.seconds) * self.price_hourly / 3600)


def _type_id(instance_type: InstanceType | int) -> int:
    return instance_type if isinstance(instance_type, int) else instance_type.pk


def _catalog_price(instance_type: InstanceType | int) -> Decimal:
    if isinstance(instance_type, InstanceType):
        return instance_type.price_per_hour
    return InstanceType.objects.values_list("price_per_hour", flat=True).get(pk=instance_type)


def current_price_row(instance_type: InstanceType | int) -> InstanceTypePrice | None:
    return (
        InstanceTypePrice.objects.filter(instance_type_id=_type_id(instance_type))
        .order_by("-effective_from")
        .first()
    )


def price_of(instance_type: InstanceType | int, *, at: datetime | None = None) -> Decimal:
    """The hourly USD price of one droplet of `instance_type` in force at `at` (default now)."""
    at = at or timezone.now()
    price = (
        InstanceTypePrice.objects.filter(
            instance_type_id=_type_id(instance_type), effective_from__lte=at
        )
        .order_by("-effective_from")
        .values_list("price_hourly", flat=True)
        .first()
    )
    return price if price is not None else _catalog_price(instance_type)


def _month_starts(start: datetime, end: datetime) -> Iterable[datetime]:
    """UTC month starts strictly inside (start, end)."""
    t = start.astimezone(UTC)
    year, month = t.year, t.month
    while True:
        month += 1
        if month == 13:
            year, month = year + 1, 1
        boundary = datetime(year, month, 1, tzinfo=UTC)
        if boundary >= end:
            return
        yield boundary


def price_spans(
    instance_type: InstanceType | int, start: datetime, end: datetime
) -> list[PricedSpan]:
    """[start, end) cut at every price change and every UTC month start, each piece with the
    price in force over it. Whole seconds: a piece's seconds are its end's epoch second minus its
    start's, so the pieces' seconds add up to the whole span's."""
    if end <= start:
        return []
    type_id = _type_id(instance_type)
    rows = list(
        InstanceTypePrice.objects.filter(instance_type_id=type_id, effective_from__lt=end)
        .order_by("effective_from")
        .values_list("effective_from", "price_hourly")
    )
    before = [price for at, price in rows if at <= start]
    # No row yet at `start`: the catalog price was in force (pricing's first sync records it).
    price = before[-1] if before else _catalog_price(instance_type)
    cuts: list[tuple[datetime, Decimal | None]] = [(at, p) for at, p in rows if at > start]
    cuts += [(m, None) for m in _month_starts(start, end)]
    cuts.sort(key=lambda cut: (cut[0], cut[1] is None))
    bounds: list[tuple[datetime, datetime, Decimal]] = []
    cursor = start
    for at, new_price in cuts:
        if at > cursor:
            bounds.append((cursor, at, price))
            cursor = at
        if new_price is not None:
            price = new_price
    bounds.append((cursor, end, price))
    # Whole seconds that add up to the whole span's (its floor): the last piece takes the rest.
    total = int((end - start).total_seconds())
    spans: list[PricedSpan] = []
    for a, b, p in bounds[:-1]:
        spans.append(PricedSpan(a, b, int((b - a).total_seconds()), p))
    a, b, p = bounds[-1]
    spans.append(PricedSpan(a, b, max(0, total - sum(s.seconds for s in spans)), p))
    return spans


def cost_of_usage(instance_type: InstanceType | int, start: datetime, end: datetime) -> Decimal:
    """USD for one droplet of `instance_type` running [start, end): each span at its price, each
    span rounded to the cent (as the usage ledger stores it). A future span is priced at the
    price in force now (the latest row), which is what a forecast can know."""
    return sum((span.cost for span in price_spans(instance_type, start, end)), Decimal(0))


def volume_price_of(*, at: datetime | None = None) -> Decimal:
    """USD per GB-month of block storage in force at `at` (default now)."""
    at = at or timezone.now()
    price = (
        VolumePrice.objects.filter(effective_from__lte=at)
        .order_by("-effective_from")
        .values_list("price_gb_month", flat=True)
        .first()
    )
    if price is None:
        return Decimal(str(settings.LABGPU_VOLUME_PRICE_GB_MONTH))
    return price


def volume_spans(start: datetime, end: datetime) -> list[tuple[datetime, datetime, Decimal]]:
    """[start, end) cut at each volume price change and each UTC month start, with its price."""
    if end <= start:
        return []
    changes = list(
        VolumePrice.objects.filter(effective_from__gt=start, effective_from__lt=end)
        .order_by("effective_from")
        .values_list("effective_from", "price_gb_month")
    )
    price = volume_price_of(at=start)
    cuts: list[tuple[datetime, Decimal | None]] = [(at, p) for at, p in changes]
    cuts += [(m, None) for m in _month_starts(start, end)]
    cuts.sort(key=lambda cut: (cut[0], cut[1] is None))
    out, cursor = [], start
    for at, new_price in cuts:
        if at > cursor:
            out.append((cursor, at, price))
            cursor = at
        if new_price is not None:
            price = new_price
    out.append((cursor, end, price))
    return out


def volume_cost(size_gb: int, start: datetime, end: datetime) -> Decimal:
    """USD for `size_gb` GB stored over [start, end), each piece at the price in force."""
    total = Decimal(0)
    for a, b, price in volume_spans(start, end):
        hours = Decimal((b - a).total_seconds()) / 3600
        total += Decimal(size_gb) * hours / HOURS_PER_MONTH * price
    return total.quantize(Decimal("0.000001"))


@dataclass(frozen=True)
class Conversion:
    code: str
    rate: Decimal
    rate_date: str  # ISO date the rate is from

    def convert(self, usd: Decimal) -> Decimal:
        return to_cents(usd * self.rate)


def display_currency() -> Conversion | None:
    """The site's display currency, or None when amounts are shown in USD only."""
    row = DisplayCurrency.objects.order_by("-created_at", "-id").first()
    if row is None or not row.code or row.rate is None or row.rate_date is None:
        return None
    return Conversion(code=row.code, rate=row.rate, rate_date=row.rate_date.isoformat())


def price_rows(instance_type: InstanceType | int) -> list[InstanceTypePrice]:
    """The instance type's price history, newest first."""
    return list(
        InstanceTypePrice.objects.filter(instance_type_id=_type_id(instance_type)).order_by(
            "-effective_from"
        )
    )


def price_list() -> dict:
    """Every instance type's price in force now, the volume price and the display currency."""
    conv = display_currency()
    latest: dict[int, InstanceTypePrice] = {}
    for row in InstanceTypePrice.objects.order_by("instance_type_id", "-effective_from"):
        latest.setdefault(row.instance_type_id, row)
    items = []
    for it in InstanceType.objects.order_by("name"):
        row = latest.get(it.pk)
        price = row.price_hourly if row else it.price_per_hour
        items.append(
            {
                "instance_type": it.pk,
                "instance_type_name": it.name,
                "provider_size": it.provider_size,
                "provider_price_hourly": row.provider_price_hourly if row else it.price_per_hour,
                "provider_price_monthly": row.provider_price_monthly if row else None,
                "adjustment_pct": row.adjustment_pct if row else Decimal(0),
                "price_hourly": price,
                "price_hourly_converted": conv.convert(price) if conv else None,
                "effective_from": row.effective_from if row else None,
                "source": row.source if row else "catalog",
            }
        )
    volume = VolumePrice.objects.order_by("-effective_from").first()
    return {
        "currency": "USD",
        "instance_types": items,
        "volume": {
            "price_gb_month": volume_price_of(),
            "effective_from": volume.effective_from if volume else None,
        },
        "display_currency": (
            {"code": conv.code, "rate": conv.rate, "rate_date": conv.rate_date} if conv else None
        ),
    }

"""Usage metered before periods existed was backfilled (0005) as one period per record, at the
record's price, even where the record ran over a UTC month start or a price change: its seconds
all landed on the month it started in. This cuts each such record as today's metering does
(labgpu.pricing.selectors.price_spans): at every UTC month start and every price change inside
it, the part before the first change at the price the record carried, each later part at the
price then in force, each part rounded once to the cent; the record's and its booking's cost
follow. Records already cut (more than one period, or one that needs no cut) are left alone.
"""

from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal

from django.db import migrations


def _month_starts(start, end):
    t = start.astimezone(UTC)
    year, month = t.year, t.month
    while True:
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        boundary = datetime(year, month, 1, tzinfo=UTC)
        if boundary >= end:
            return
        yield boundary


def cut_record(record, price_rows):
    """(start, end, seconds, price, cost) pieces of `record`; `price_rows` are (effective_from,
    price_hourly) of its instance type, in order."""
    start, end = record.started_at, record.ended_at
    changes = [(at, p) for at, p in price_rows if start < at < end]
    cuts = sorted(
        [(at, p) for at, p in changes] + [(m, None) for m in _month_starts(start, end)],
        key=lambda cut: (cut[0], cut[1] is None),
    )
    price = record.price_per_hour
    bounds, cursor = [], start
    for at, new_price in cuts:
        if at > cursor:
            bounds.append((cursor, at, price))
            cursor = at
        if new_price is not None:
            price = new_price
    bounds.append((cursor, end, price))
    pieces = []
    for a, b, p in bounds[:-1]:
        pieces.append((a, b, int((b - a).total_seconds()), p))
    a, b, p = bounds[-1]
    pieces.append((a, b, max(0, record.seconds - sum(piece[2] for piece in pieces)), p))
    return [
        (a, b, s, p, (Decimal(s) * p / 3600).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
        for a, b, s, p in pieces
    ]


def split_backfilled_periods(apps, schema_editor):
    record_model = apps.get_model("usage", "UsageRecord")
    period_model = apps.get_model("usage", "UsagePeriod")
    price_model = apps.get_model("pricing", "InstanceTypePrice")
    booking_model = apps.get_model("bookings", "Booking")
    rows: dict[int, list] = {}
    bookings = set()
    for record in record_model.objects.order_by("pk").iterator():
        periods = list(period_model.objects.filter(record=record))
        if len(periods) != 1:
            continue  # cut by today's metering already (or not priced: left to it)
        if record.instance_type_id not in rows:
            rows[record.instance_type_id] = list(
                price_model.objects.filter(instance_type_id=record.instance_type_id)
                .order_by("effective_from")
                .values_list("effective_from", "price_hourly")
            )
        pieces = cut_record(record, rows[record.instance_type_id])
        if len(pieces) == 1:
            continue  # within one month at one price: the backfill was right
        period_model.objects.filter(record=record).delete()
        period_model.objects.bulk_create(
            period_model(
                record=record, started_at=a, ended_at=b, seconds=s, price_per_hour=p, cost=c
            )
            for a, b, s, p, c in pieces
        )
        record_model.objects.filter(pk=record.pk).update(cost=sum(c for *_, c in pieces))
        bookings.add(record.booking_id)
    for booking_id in sorted(bookings):
        charged = record_model.objects.filter(booking_id=booking_id, charged_to_lab=True)
        booking_model.objects.filter(pk=booking_id).update(
            actual_cost=sum((r.cost for r in charged), Decimal(0))
        )


class Migration(migrations.Migration):
    dependencies = [
        ("usage", "0005_usage_periods"),
        ("pricing", "0001_initial"),
        ("bookings", "0005_book_express"),
    ]

    operations = [migrations.RunPython(split_backfilled_periods, migrations.RunPython.noop)]

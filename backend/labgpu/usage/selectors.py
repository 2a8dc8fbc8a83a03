"""Usage aggregates by lab, user, pool and day; each record is split across the days it spans."""

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta, tzinfo
from decimal import Decimal

from django.db.models import QuerySet, Sum

from labgpu.accounts.models import User
from labgpu.accounts.selectors import admin_lab_ids_of
from labgpu.core.timeutils import overlap
from labgpu.usage.models import BookingUtilisation, StorageUsage, UsagePeriod, UsageRecord

GROUPS = ("lab", "user", "pool", "day", "instance_type", "booking", "cost_centre")


def usage_visible_to(user: User) -> QuerySet[UsageRecord]:
    """Site admins: all; lab admins: their labs; researchers: their own use."""
    records = UsageRecord.objects.select_related(
        "lab", "user", "pool", "instance_type", "booking__cost_centre"
    )
    if user.is_site_admin:
        return records
    return records.filter(lab_id__in=admin_lab_ids_of(user)) | records.filter(user=user)


def _days(start: datetime, end: datetime, tz: tzinfo) -> Iterable[tuple[date, datetime, datetime]]:
    """The calendar days of `tz` that [start, end) touches, each with its bounds (23 or 25 hours
    long on a daylight-saving change: each bound is that day's own local midnight)."""
    day = start.astimezone(tz).date()
    begin = datetime(day.year, day.month, day.day, tzinfo=tz)
    while begin < end:
        following = day + timedelta(days=1)
        next_begin = datetime(following.year, following.month, following.day, tzinfo=tz)
        yield day, begin, next_begin
        day, begin = following, next_begin


def usage_aggregate(
    records: Iterable[UsageRecord],
    *,
    start: datetime,
    end: datetime,
    group_by: list[str],
    tz: tzinfo = UTC,
    include_provider_cost: bool = False,
) -> list[dict]:
    """GPU-hours, cost and seconds of `records` inside [start, end), summed per `group_by`;
    "day" is a calendar day in `tz` (the API passes the user's profile zone)."""
    totals: dict[tuple, dict] = defaultdict(
        lambda: {
            "gpu_hours": Decimal(0),
            "cost": Decimal(0),
            "seconds": 0,
            "active_s": 0.0,
            "observed_s": 0.0,
            "utilisation_s": 0.0,
        }
    )
    records = list(records)
    share = _utilisation_shares(records)
    periods = _periods_of(records)
    by_cost_centre = "cost_centre" in group_by
    for record in records:
        if not record.charged_to_lab and not include_provider_cost:
            continue
        # Each period at its own price (a price change cuts a record): cost = Σ seconds × price.
        for period_start, period_end, price in periods.get(record.pk) or [
            (record.started_at, record.ended_at, record.price_per_hour)
        ]:
            for day, day_start, day_end in _days(
                max(start, period_start), min(end, period_end), tz
            ):
                seconds = overlap(period_start, period_end, day_start, day_end).total_seconds()
                seconds = min(seconds, overlap(start, end, day_start, day_end).total_seconds())
                if seconds <= 0:
                    continue
                key_parts = {
                    "lab": (record.lab_id, record.lab.name),
                    "user": (record.user_id, record.user.username),
                    "pool": (record.pool_id, record.pool.name),
                    "instance_type": (record.instance_type_id, record.instance_type.name),
                    "day": (day.isoformat(), day.isoformat()),
                    "booking": (record.booking_id, f"#{record.booking_id}"),
                }
                if by_cost_centre:
                    # The booking's grant or project code; none: null and "" (the SPA names it).
                    key_parts["cost_centre"] = _cost_centre(record)
                key = tuple(key_parts[group] for group in group_by)
                row = totals[key]
                hours = Decimal(seconds) / 3600
                row["gpu_hours"] += hours * record.gpu_count
                row["cost"] += hours * price
                row["seconds"] += int(seconds)
                if (per_second := share.get(record.pk)) is not None:
                    # The booking's used / observed / utilisation time, spread evenly over its
                    # metered seconds (heartbeats come from the node that served it).
                    for field in ("active_s", "observed_s", "utilisation_s"):
                        row[field] += per_second[field] * seconds
    rows = []
    for key, row in sorted(totals.items(), key=lambda item: tuple(str(k[1]) for k in item[0])):
        out: dict = {}
        for group, (ident, label) in zip(group_by, key, strict=True):
            out[group] = ident
            if group != "day":
                out[f"{group}_name"] = label
        out["gpu_hours"] = row["gpu_hours"].quantize(Decimal("0.01"))
        out["cost"] = row["cost"].quantize(Decimal("0.01"))
        out["seconds"] = row["seconds"]
        out["booked_hours"] = round(row["seconds"] / 3600, 2)
        out["used_hours"] = round(row["active_s"] / 3600, 2)
        out["average_utilisation_pct"] = (
            round(row["utilisation_s"] / row["observed_s"], 1) if row["observed_s"] else None
        )
        rows.append(out)
    return rows


def _periods_of(records: list[UsageRecord]) -> dict[int, list[tuple[datetime, datetime, Decimal]]]:
    """Each record's priced periods, in one query."""
    out: dict[int, list[tuple[datetime, datetime, Decimal]]] = defaultdict(list)
    rows = UsagePeriod.objects.filter(record_id__in=[r.pk for r in records]).order_by(
        "record_id", "started_at"
    )
    for record_id, a, b, price in rows.values_list(
        "record_id", "started_at", "ended_at", "price_per_hour"
    ):
        out[record_id].append((a, b, price))
    return out


def _cost_centre(record: UsageRecord) -> tuple[int | None, str]:
    centre = record.booking.cost_centre
    return (None, "") if centre is None else (centre.pk, centre.code)


def _utilisation_shares(records: list[UsageRecord]) -> dict[int, dict[str, float]]:
    """Per record charged to its lab: its booking's heartbeat totals per metered second (two
    queries, whatever the number of records)."""
    charged = [r for r in records if r.charged_to_lab]
    booking_ids = {r.booking_id for r in charged}
    if not booking_ids:
        return {}
    metered = dict(
        UsageRecord.objects.filter(booking_id__in=booking_ids, charged_to_lab=True)
        .values_list("booking_id")
        .annotate(total=Sum("seconds"))
    )
    totals = {
        u.booking_id: u for u in BookingUtilisation.objects.filter(booking_id__in=booking_ids)
    }
    shares: dict[int, dict[str, float]] = {}
    for record in charged:
        util, seconds = totals.get(record.booking_id), metered.get(record.booking_id) or 0
        if util is None or seconds <= 0:
            continue
        shares[record.pk] = {
            "active_s": min(util.active_s, seconds) / seconds,
            "observed_s": min(util.observed_s, seconds) / seconds,
            "utilisation_s": util.utilisation_s * min(1.0, seconds / util.observed_s) / seconds
            if util.observed_s
            else 0.0,
        }
    return shares


def storage_visible_to(user: User) -> QuerySet[StorageUsage]:
    """Like `usage_visible_to`: site admins all, lab admins their labs', others their own."""
    records = StorageUsage.objects.select_related("lab")
    if user.is_site_admin:
        return records
    return records.filter(lab_id__in=admin_lab_ids_of(user)) | records.filter(user=user)


def storage_by_lab(
    records: Iterable[StorageUsage], *, start: datetime, end: datetime
) -> list[dict]:
    """Storage GB-months and cost inside [start, end) per lab (each period prorated by time)."""
    totals: dict[tuple[int, str], dict] = defaultdict(
        lambda: {"gb_months": Decimal(0), "cost": Decimal(0)}
    )
    for record in records:
        length = (record.ended_at - record.started_at).total_seconds()
        inside = overlap(record.started_at, record.ended_at, start, end).total_seconds()
        if length <= 0 or inside <= 0:
            continue
        share = Decimal(inside) / Decimal(length)
        row = totals[(record.lab_id, record.lab.name)]
        row["gb_months"] += record.gb_months * share
        row["cost"] += record.cost * share
    return [
        {
            "lab": lab_id,
            "lab_name": name,
            "gb_months": row["gb_months"].quantize(Decimal("0.01")),
            "cost": row["cost"].quantize(Decimal("0.01")),
        }
        for (lab_id, name), row in sorted(totals.items(), key=lambda item: item[0][1])
    ]

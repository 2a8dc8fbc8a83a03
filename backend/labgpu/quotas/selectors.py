from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from django.db.models import (
    Count,
    DateTimeField,
    DurationField,
    ExpressionWrapper,
    F,
    Q,
    Sum,
    Value,
)
from django.db.models.functions import Greatest, Least

from labgpu.bookings.models import Booking, Overlaps, bigint
from labgpu.core.timeutils import hours, month_bounds, overlap
from labgpu.quotas.models import Quota

TWO_PLACES = Decimal("0.01")


@dataclass(frozen=True)
class QuotaUsage:
    quota_gpu_hours: Decimal
    used: Decimal
    committed: Decimal

    @property
    def remaining(self) -> Decimal:
        return max(Decimal(0), self.quota_gpu_hours - self.used - self.committed)


def booking_gpu_hours_in(booking: Booking, start: datetime, end: datetime) -> Decimal:
    """GPU-hours of `booking` that fall in [start, end): consumed when known, else booked."""
    booked = Decimal(hours(overlap(booking.start, booking.end, start, end))) * booking.gpu_count
    if booking.status in Booking.CONSUMING_STATUSES and booking.consumed_gpu_hours is not None:
        total = booking.duration.total_seconds()
        share = Decimal(overlap(booking.start, booking.end, start, end).total_seconds()) / Decimal(
            total
        )
        return booking.consumed_gpu_hours * share
    return booked


def quota_usage(
    *,
    lab_id: int,
    instance_type_id: int,
    month: date,
    exclude_booking_id: int | None = None,
    quota: Quota | None = None,
) -> QuotaUsage:
    """Committed (live, not yet consuming) and used (metered or consuming) GPU-hours in `month`.

    Summed in SQL, grouped by status and GPU count; only metered bookings are apportioned in
    Python. The rows are found through the GiST index `booking_lab_period` (the month bounds both
    sides), so the cost does not grow with the lab's history (docs/benchmarks.md).
    """
    month_begin, month_end = month_bounds(month)
    if quota is None:
        quota = Quota.objects.filter(
            lab_id=lab_id, instance_type_id=instance_type_id, month=month
        ).first()
    bookings = Booking.objects.filter(
        Overlaps("start", "end", month_begin, month_end),
        status__in=Booking.QUOTA_STATUSES,
        lab_id=bigint(lab_id),
        pool__instance_type_id=instance_type_id,
    ).exclude(pk=exclude_booking_id)
    in_month = ExpressionWrapper(
        Least(F("end"), Value(month_end, output_field=DateTimeField()))
        - Greatest(F("start"), Value(month_begin, output_field=DateTimeField())),
        output_field=DurationField(),
    )
    metered = Q(status__in=Booking.CONSUMING_STATUSES, consumed_gpu_hours__isnull=False)
    used = committed = Decimal(0)
    grouped = (
        bookings.values("status", "gpu_count")
        .annotate(total=Sum(in_month, filter=~metered), metered=Count("pk", filter=metered))
        .order_by()
    )
    any_metered = False
    for row in grouped:
        any_metered |= row["metered"] > 0
        if row["total"] is None:
            continue
        gpu_hours = Decimal(row["total"].total_seconds()) / 3600 * row["gpu_count"]
        if row["status"] in Booking.CONSUMING_STATUSES:
            used += gpu_hours
        else:
            committed += gpu_hours
    if any_metered:
        metered_rows = bookings.filter(metered).only("start", "end", "status", "consumed_gpu_hours")
        for booking in metered_rows:
            used += booking_gpu_hours_in(booking, month_begin, month_end)
    return QuotaUsage(
        quota_gpu_hours=quota.gpu_hours if quota else Decimal(0),
        used=used.quantize(TWO_PLACES),
        committed=committed.quantize(TWO_PLACES),
    )

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from django.db.models import Q

from labgpu.bookings.models import Booking
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
    *, lab_id: int, instance_type_id: int, month: date, exclude_booking_id: int | None = None
) -> QuotaUsage:
    month_begin, month_end = month_bounds(month)
    quota = Quota.objects.filter(
        lab_id=lab_id, instance_type_id=instance_type_id, month=month
    ).first()
    bookings = Booking.objects.filter(
        Q(status__in=Booking.LIVE_STATUSES) | Q(status=Booking.Status.COMPLETED),
        lab_id=lab_id,
        pool__instance_type_id=instance_type_id,
        start__lt=month_end,
        end__gt=month_begin,
    ).exclude(pk=exclude_booking_id)
    used = committed = Decimal(0)
    for booking in bookings.only("start", "end", "status", "gpu_count", "consumed_gpu_hours"):
        share = booking_gpu_hours_in(booking, month_begin, month_end)
        if booking.status in Booking.CONSUMING_STATUSES:
            used += share
        else:
            committed += share
    return QuotaUsage(
        quota_gpu_hours=quota.gpu_hours if quota else Decimal(0),
        used=used.quantize(TWO_PLACES),
        committed=committed.quantize(TWO_PLACES),
    )

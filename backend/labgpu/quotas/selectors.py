from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal

from labgpu.bookings.models import Booking, Overlaps, bigint
from labgpu.core.rows import prepared_cursor
from labgpu.core.timeutils import hours, month_bounds, overlap
from labgpu.quotas.models import Quota

TWO_PLACES = Decimal("0.01")


def _sql_list(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{value}'" for value in values) + ")"


# A lab's GPU time in one month on one instance type, summed by status and GPU count; metered
# bookings (consuming, with consumed_gpu_hours) are only counted here and apportioned in Python.
# Plain SQL: Django compiled the same queryset on every booking create, which cost more CPU than
# PostgreSQL spends running it. `tstzrange(start, end) && …`, the lab id as bigint and the status
# list spelled as in the index let the GiST index `booking_lab_period` bound both sides (see
# bookings.models.Overlaps); the statuses are the model's constants, not input.
_METERED = (
    f"(b.status IN {_sql_list(Booking.CONSUMING_STATUSES)} AND b.consumed_gpu_hours IS NOT NULL)"
)
USAGE_BY_STATUS_SQL = f"""
SELECT b.status, b.gpu_count,
       SUM(LEAST(b."end", %(end)s) - GREATEST(b.start, %(begin)s)) FILTER (WHERE NOT {_METERED}),
       COUNT(*) FILTER (WHERE {_METERED})
FROM bookings_booking b
JOIN catalog_nodepool p ON p.id = b.pool_id
WHERE tstzrange(b.start, b."end") && tstzrange(%(begin)s, %(end)s)
  AND b.status IN {_sql_list(Booking.QUOTA_STATUSES)}
  AND b.lab_id = %(lab)s::bigint
  AND p.instance_type_id = %(instance_type)s
  AND b.id IS DISTINCT FROM %(exclude)s
GROUP BY b.status, b.gpu_count
"""  # noqa: S608 - only the model's status constants are formatted in; values are parameters


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
    return quota_usage_tally(
        lab_id=lab_id,
        instance_type_id=instance_type_id,
        month=month,
        exclude_booking_id=exclude_booking_id,
        quota=quota,
    ).usage()


@dataclass
class UsageTally:
    """A month's usage as USAGE_BY_STATUS_SQL sums it, kept by (status, GPU count): a booking
    written since it was read (a series' earlier occurrence, in the same transaction) is `add`ed
    to its group, so `usage()` is what the statement would answer now, to the same rounding."""

    quota_gpu_hours: Decimal
    month_begin: datetime
    month_end: datetime
    booked: dict[tuple[str, int], timedelta] = field(default_factory=dict)
    metered_used: Decimal = Decimal(0)

    def add(self, *, status: str, gpu_count: int, start: datetime, end: datetime) -> None:
        inside = overlap(start, end, self.month_begin, self.month_end)
        if inside > timedelta(0):
            key = (status, gpu_count)
            self.booked[key] = self.booked.get(key, timedelta(0)) + inside

    def usage(self) -> QuotaUsage:
        used = committed = Decimal(0)
        for (status, gpu_count), total in self.booked.items():
            gpu_hours = Decimal(total.total_seconds()) / 3600 * gpu_count
            if status in Booking.CONSUMING_STATUSES:
                used += gpu_hours
            else:
                committed += gpu_hours
        used += self.metered_used
        return QuotaUsage(
            quota_gpu_hours=self.quota_gpu_hours,
            used=used.quantize(TWO_PLACES),
            committed=committed.quantize(TWO_PLACES),
        )


def quota_usage_tally(
    *,
    lab_id: int,
    instance_type_id: int,
    month: date,
    exclude_booking_id: int | None = None,
    quota: Quota | None = None,
) -> UsageTally:
    """`quota_usage`'s reads, before they are summed up (UsageTally)."""
    month_begin, month_end = month_bounds(month)
    if quota is None:
        quota = Quota.objects.filter(
            lab_id=lab_id, instance_type_id=instance_type_id, month=month
        ).first()
    tally = UsageTally(
        quota_gpu_hours=quota.gpu_hours if quota else Decimal(0),
        month_begin=month_begin,
        month_end=month_end,
    )
    any_metered = False
    with prepared_cursor() as cursor:
        cursor.execute(
            USAGE_BY_STATUS_SQL,
            {
                "lab": lab_id,
                "instance_type": instance_type_id,
                "begin": month_begin,
                "end": month_end,
                "exclude": exclude_booking_id,
            },
        )
        for status, gpu_count, total, metered in cursor.fetchall():
            any_metered |= metered > 0
            if total is not None:
                tally.booked[(status, gpu_count)] = total
    if any_metered:
        metered_rows = (
            Booking.objects.filter(
                Overlaps("start", "end", month_begin, month_end),
                status__in=Booking.CONSUMING_STATUSES,
                consumed_gpu_hours__isnull=False,
                lab_id=bigint(lab_id),
                pool__instance_type_id=instance_type_id,
            )
            .exclude(pk=exclude_booking_id)
            .only("start", "end", "status", "gpu_count", "consumed_gpu_hours")
        )
        for booking in metered_rows:
            tally.metered_used += booking_gpu_hours_in(booking, month_begin, month_end)
    return tally

from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator
from django.db import models
from django.db.models import BigIntegerField, BooleanField, F, Func, Q, Value
from django.db.models.functions import Cast
from django.utils.translation import gettext_lazy as _

from labgpu.core.models import BaseModel


class Overlaps(Func):
    """`[start, end)` of a row overlaps `[lo, hi)`, spelled `tstzrange(start, end) && tstzrange(lo,
    hi)` so that the GiST indexes of migration 0007 answer it with both bounds.

    `start < hi AND end > lo` means the same, but a B-tree bounds only one side of it: a query for
    one month would read every earlier (or later) row of the pool or lab, and cost more as
    history grows.
    """

    output_field = BooleanField()
    arity = 4

    # The row's range spelled as the index that should answer is written: `booking_pool_period`
    # indexes `tstzrange(start, "end")`, the live-slot exclusion constraint (migration 0002)
    # `tstzrange(reserved_start, reserved_end, '[)')`; the same range in another spelling is not
    # matched to the index.
    row_bounds = ""

    def __init__(self, start: str, end: str, lo, hi) -> None:  # type: ignore[no-untyped-def]
        super().__init__(F(start), F(end), Value(lo), Value(hi))

    def as_sql(self, compiler, connection, **extra):  # type: ignore[no-untyped-def]
        start, end, lo, hi = (compiler.compile(e) for e in self.get_source_expressions())
        sql = f"tstzrange({start[0]}, {end[0]}{self.row_bounds}) && tstzrange({lo[0]}, {hi[0]})"
        return sql, [*start[1], *end[1], *lo[1], *hi[1]]


def utc_iso_sql(column: str) -> str:
    """SQL that writes the timestamptz `column` as the API writes a moment (core.timeutils.iso,
    DRF's DateTimeField): `2026-12-01T09:00:00Z`, with `.ffffff` only when it has microseconds.

    For reads that return hundreds of moments (a pool-month's busy blocks, bookings.selectors):
    text needs no datetime loader and no formatting in Python, which cost more than the query.
    """
    utc = f"({column} AT TIME ZONE 'UTC')"
    return (
        f"""to_char({utc}, 'YYYY-MM-DD"T"HH24:MI:SS') || CASE WHEN to_char({utc}, 'US') """
        f"""= '000000' THEN '' ELSE to_char({utc}, '.US') END || 'Z'"""
    )


def bigint(value: int) -> Cast:
    """An id as `bigint`: compared with a literal `int`, a bigint column in a GiST index (btree_gist
    has no cross-type operators) is only filtered, not searched."""
    return Cast(Value(value), output_field=BigIntegerField())


class BookingSeries(BaseModel):
    """A recurring booking: the rule one request asked for, and what its occurrences were told.

    The occurrences are ordinary bookings (`Booking.series`), each checked by the one rulebook
    when the series was made (services/series.py); the rule is kept to show and to describe the
    series, not to book from again. The wall-clock time of `first_start` in `timezone` is each
    occurrence's local start (DST-correct), `duration_minutes` its length.
    """

    class Frequency(models.TextChoices):
        DAILY = "daily", _("Daily")
        WEEKLY = "weekly", _("Weekly")
        MONTHLY = "monthly", _("Monthly")

    lab = models.ForeignKey("accounts.Lab", on_delete=models.PROTECT, related_name="series")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="booking_series"
    )
    pool = models.ForeignKey("catalog.NodePool", on_delete=models.PROTECT, related_name="series")
    frequency = models.CharField(max_length=8, choices=Frequency.choices)
    interval = models.PositiveSmallIntegerField(default=1)
    weekdays = models.JSONField(default=list, blank=True)  # ["MO", "TH"]: weekly only
    month_day = models.PositiveSmallIntegerField(null=True, blank=True)  # monthly only
    timezone = models.CharField(max_length=64)
    first_start = models.DateTimeField()
    duration_minutes = models.PositiveIntegerField()
    count = models.PositiveSmallIntegerField(null=True, blank=True)
    until = models.DateField(null=True, blank=True)
    exceptions = models.JSONField(default=list, blank=True)  # local dates skipped, ISO strings
    purpose = models.CharField(max_length=500, blank=True)
    all_or_nothing = models.BooleanField(default=False)
    # The occurrences the rules refused when the series was made: [{start, end, code, message}].
    refused = models.JSONField(default=list, blank=True)
    # Idempotency-Key of the request that made it (empty once forgotten: services/series.py).
    idempotency_key = models.CharField(max_length=255, blank=True)
    request_fingerprint = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="series_unique_user_key",
            )
        ]

    def __str__(self) -> str:
        return f"Series #{self.pk} {self.pool} {self.frequency}"


class Booking(BaseModel):
    """A lab's reservation of one node of a pool for [start, end).

    Invariant I-1: while the booking is live it holds `slot` in its pool over
    [reserved_start, reserved_end) = [start - provisioning lead, end + teardown grace). No two live
    bookings of a pool share a slot over overlapping periods: an exclusion constraint (migration
    0002) enforces it.
    """

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending approval")
        # Held for a waitlist entry (labgpu.waitlist) until its owner takes it or the offer lapses.
        OFFERED = "offered", _("Offered from the waitlist")
        SCHEDULED = "scheduled", _("Scheduled")
        PROVISIONING = "provisioning", _("Provisioning")
        READY = "ready", _("Ready")
        ENDING = "ending", _("Ending")
        COMPLETED = "completed", _("Completed")
        CANCELLED = "cancelled", _("Cancelled")
        REJECTED = "rejected", _("Rejected")
        EXPIRED = "expired", _("Expired")
        FAILED = "failed", _("Failed")

    LIVE_STATUSES = (
        Status.OFFERED,
        Status.PENDING,
        Status.SCHEDULED,
        Status.PROVISIONING,
        Status.READY,
        Status.ENDING,
    )
    # Statuses before provisioning: no node exists yet.
    NODELESS_STATUSES = (Status.OFFERED, Status.PENDING, Status.SCHEDULED)
    # Statuses whose hours count as consumed rather than committed (the node exists or existed).
    CONSUMING_STATUSES = (Status.ENDING, Status.COMPLETED)
    # Statuses whose hours count against a quota (the partial index of migration 0007 lists them).
    QUOTA_STATUSES = (*LIVE_STATUSES, Status.COMPLETED)

    lab = models.ForeignKey("accounts.Lab", on_delete=models.PROTECT, related_name="bookings")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="bookings"
    )
    pool = models.ForeignKey("catalog.NodePool", on_delete=models.PROTECT, related_name="bookings")
    start = models.DateTimeField()
    end = models.DateTimeField()
    # An approved booking of a pool that requires approval asked to end later: a lab admin decides.
    # Until then the booking ends at `end` but holds its slot up to this end (reserved_end).
    pending_end = models.DateTimeField(null=True, blank=True)
    purpose = models.CharField(max_length=500, blank=True)
    # The grant or project code the booking is paid from (labgpu.budgets), of the booking's lab.
    cost_centre = models.ForeignKey(
        "budgets.CostCentre",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="bookings",
    )
    status = models.CharField(max_length=16, choices=Status.choices, db_index=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    on_demand = models.BooleanField(default=False)

    slot = models.PositiveSmallIntegerField(validators=[MaxValueValidator(1000)])
    reserved_start = models.DateTimeField()
    reserved_end = models.DateTimeField()

    # Snapshots at booking time, so later catalog edits do not rewrite history.
    gpu_count = models.PositiveSmallIntegerField(validators=[MaxValueValidator(64)])
    price_per_hour = models.DecimalField(max_digits=10, decimal_places=4)
    consumed_gpu_hours = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)

    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.CharField(max_length=500, blank=True)
    ended_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    ended_at = models.DateTimeField(null=True, blank=True)
    # Set by the lifecycle: why provisioning failed (shown to the user), the metered cost, and
    # when the "15 minutes left" reminder went out.
    failure_reason = models.TextField(blank=True)
    # Why a booking ended before its end when the system ended it (idle reclaim), shown to people.
    end_reason = models.CharField(max_length=300, blank=True)
    actual_cost = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    reminder_sent_at = models.DateTimeField(null=True, blank=True)
    # When the user and lab admins were warned that no region showed capacity ahead of the start.
    capacity_warned_at = models.DateTimeField(null=True, blank=True)
    # JupyterLab on the node (issue 15): its per-booking token is random, sealed at rest
    # (core.sealed), made when the node's agent first asks for it, and shown only to the owner.
    jupyter = models.BooleanField(default=False)
    # The recurring series this booking is an occurrence of (issue 25), if any.
    series = models.ForeignKey(
        BookingSeries,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="bookings",
        db_index=False,  # the partial index below: a single booking's insert maintains none
    )
    notebook_token_sealed = models.TextField(blank=True, editable=False)

    class Meta:
        ordering = ["start", "id"]
        indexes = [
            models.Index(fields=["pool", "reserved_start", "reserved_end"]),
            models.Index(fields=["lab", "start"]),
            models.Index(fields=["user", "start"]),
            models.Index(
                fields=["series", "start"],
                condition=Q(series__isnull=False),
                name="booking_series_start",
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(end__gt=F("start")), name="booking_end_after_start"),
            models.CheckConstraint(
                condition=Q(reserved_start__lte=F("start")) & Q(reserved_end__gte=F("end")),
                name="booking_reserved_covers_booking",
            ),
        ]

    def __str__(self) -> str:
        return f"Booking #{self.pk} {self.pool} {self.start:%Y-%m-%d %H:%M} ({self.status})"

    @property
    def duration(self) -> timedelta:
        return self.end - self.start

    @property
    def gpu_hours(self) -> Decimal:
        return (Decimal(self.duration.total_seconds()) / 3600 * self.gpu_count).quantize(
            Decimal("0.01")
        )

    @property
    def estimated_cost(self) -> Decimal:
        hours = Decimal(self.duration.total_seconds()) / 3600
        return (hours * self.price_per_hour).quantize(Decimal("0.01"))

    @property
    def actual_end(self) -> datetime:
        """When the booking really ended: the planned end, or the moment someone ended it early.

        A booking cancelled before it started never ran; its end is its start (a zero-length
        period rather than an end before the start).
        """
        if self.ended_at is None or self.ended_at >= self.end:
            return self.end
        return max(self.ended_at, self.start)

    @property
    def current_node(self):  # type: ignore[no-untyped-def]
        """The latest attempt's node (a list prefetches them: bookings.selectors.nodes_load)."""
        if self.status in self.NODELESS_STATUSES or not self.pk:
            return None  # no node exists before provisioning: spare the query
        if getattr(self, "has_node", True) is False:
            return None  # the query that read it said it has none (the bookings list's page)
        nodes = list(self.nodes.all())
        return max(nodes, key=lambda node: node.attempt) if nodes else None

    @property
    def is_live(self) -> bool:
        return self.status in self.LIVE_STATUSES


class IdempotencyKey(models.Model):
    """Remembers `Idempotency-Key` of booking creates so a retried request never books twice."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    request_fingerprint = models.CharField(max_length=64)
    booking = models.ForeignKey(Booking, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="idempotency_unique_user_key")
        ]

    def __str__(self) -> str:
        return f"{self.key} → booking #{self.booking_id}"


class Notification(BaseModel):
    """A message we sent a person (approvals, node ready, ending soon, failures…), kept so the
    app can list it with read/unread; written where the e-mail is sent, whether or not the
    person has an address."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    booking = models.ForeignKey(
        Booking, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    subject = models.CharField(max_length=300)
    body = models.TextField(blank=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "-created_at"], name="notification_user_recent")]

    def __str__(self) -> str:
        return self.subject

from decimal import Decimal

from django.conf import settings
from django.db import models

from labgpu.core.models import BaseModel


class UsageRecord(BaseModel):
    """Metered use of one droplet: from the provider's `created_at` to the confirmed destroy.

    Invariant I-8: every droplet the provider created for us has exactly one record (unique per
    provider account and droplet id). A node the lab was not handed healthy (failed, cancelled
    while provisioning, a stray duplicate) is our cost, not the lab's: `charged_to_lab` is false
    and its hours count neither against the quota nor in the lab's bill.
    """

    node = models.ForeignKey(
        "provisioning.Node", on_delete=models.PROTECT, related_name="usage_records"
    )
    provider_account = models.ForeignKey(
        "catalog.ProviderAccount", on_delete=models.PROTECT, related_name="+"
    )
    droplet_id = models.CharField(max_length=64)
    booking = models.ForeignKey(
        "bookings.Booking", on_delete=models.PROTECT, related_name="usage_records"
    )
    lab = models.ForeignKey("accounts.Lab", on_delete=models.PROTECT, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    pool = models.ForeignKey("catalog.NodePool", on_delete=models.PROTECT, related_name="+")
    instance_type = models.ForeignKey(
        "catalog.InstanceType", on_delete=models.PROTECT, related_name="+"
    )
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField()
    seconds = models.PositiveBigIntegerField()
    gpu_count = models.PositiveSmallIntegerField()
    # The price in force when the droplet started (a later change is in `periods`).
    price_per_hour = models.DecimalField(max_digits=10, decimal_places=4)
    # USD to the cent: the sum of its periods' costs (each priced at the price then in force).
    cost = models.DecimalField(max_digits=12, decimal_places=2, default=Decimal(0))
    charged_to_lab = models.BooleanField(default=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["lab", "started_at"])]
        constraints = [
            models.UniqueConstraint(
                fields=["provider_account", "droplet_id"], name="usage_one_record_per_droplet"
            )
        ]

    def __str__(self) -> str:
        return f"{self.node} {self.seconds}s"

    @property
    def gpu_hours(self) -> Decimal:
        return (Decimal(self.seconds) / 3600 * self.gpu_count).quantize(Decimal("0.0001"))


class UsagePeriod(models.Model):
    """A stretch of one usage record at one price: a record is cut at every price change and at
    every UTC month start (labgpu.pricing.selectors.price_spans), so each metered second is
    priced at the price in force when it ran and belongs to one month's statement. The periods
    of a record partition it: their seconds add up to its seconds, their costs to its cost."""

    record = models.ForeignKey(UsageRecord, on_delete=models.CASCADE, related_name="periods")
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField()
    seconds = models.PositiveBigIntegerField()
    price_per_hour = models.DecimalField(max_digits=12, decimal_places=5)
    cost = models.DecimalField(max_digits=12, decimal_places=2)

    class Meta:
        ordering = ["record_id", "started_at"]
        indexes = [models.Index(fields=["started_at"])]
        constraints = [
            models.UniqueConstraint(fields=["record", "started_at"], name="usage_period_once")
        ]

    def __str__(self) -> str:
        return f"{self.record_id} {self.seconds}s at {self.price_per_hour}"


class BookingUtilisation(models.Model):
    """What the booking's node did with its GPUs, summed from the agent's heartbeats.

    `observed_s` is heartbeat time (each gap capped, so a silent agent adds nothing), `active_s`
    the part of it with any GPU busy, a process on a GPU or an SSH session ("used hours"), and
    `utilisation_s` the integral of the mean GPU utilisation in %·s (average = it / observed_s).
    The idle fields belong to the pool's idle policy (labgpu.health.services).
    """

    booking = models.OneToOneField(
        "bookings.Booking", on_delete=models.CASCADE, primary_key=True, related_name="utilisation"
    )
    observed_s = models.FloatField(default=0)
    active_s = models.FloatField(default=0)
    utilisation_s = models.FloatField(default=0)
    last_sample_at = models.DateTimeField(null=True, blank=True)
    # When the node was last seen in use (or the owner pressed "keep"); idle time counts from it.
    last_active_at = models.DateTimeField(null=True, blank=True)
    idle_warned_at = models.DateTimeField(null=True, blank=True)
    kept_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"booking {self.booking_id}: {self.used_hours} h used"

    @property
    def average_utilisation_pct(self) -> float | None:
        return round(self.utilisation_s / self.observed_s, 1) if self.observed_s else None

    @property
    def used_hours(self) -> float:
        return round(self.active_s / 3600, 4)


class StorageUsage(BaseModel):
    """Metered storage of one persistent volume over [started_at, ended_at): GB-months and cost.

    GB-months = size × hours / 730 (a month of 730 hours); the price per GB-month is
    `LABGPU_VOLUME_PRICE_GB_MONTH`. Periods of one volume never overlap (each starts where the
    last ended: `storage_record` continues from the latest one), so metering twice bills once.
    """

    volume = models.ForeignKey(
        "provisioning.Volume", on_delete=models.PROTECT, related_name="storage_usage"
    )
    lab = models.ForeignKey("accounts.Lab", on_delete=models.PROTECT, related_name="+")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    region = models.CharField(max_length=32)
    size_gb = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField()
    gb_months = models.DecimalField(max_digits=14, decimal_places=6)
    cost = models.DecimalField(max_digits=14, decimal_places=6)

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(fields=["volume", "started_at"], name="storage_usage_once"),
            models.CheckConstraint(
                condition=models.Q(ended_at__gt=models.F("started_at")),
                name="storage_usage_positive",
            ),
        ]

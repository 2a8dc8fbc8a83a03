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
    price_per_hour = models.DecimalField(max_digits=10, decimal_places=4)
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

    @property
    def cost(self) -> Decimal:
        return (Decimal(self.seconds) / 3600 * self.price_per_hour).quantize(Decimal("0.01"))

from decimal import Decimal

from django.conf import settings
from django.db import models

from labgpu.core.models import BaseModel


class UsageRecord(BaseModel):
    """Metered use of one node: billable from the create request to the confirmed destroy.

    A failed node is the provider's cost, not the lab's: `charged_to_lab` is false and its hours
    count neither against the quota nor in the lab's bill.
    """

    node = models.OneToOneField(
        "provisioning.Node", on_delete=models.PROTECT, related_name="usage_record"
    )
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

    def __str__(self) -> str:
        return f"{self.node} {self.seconds}s"

    @property
    def gpu_hours(self) -> Decimal:
        return (Decimal(self.seconds) / 3600 * self.gpu_count).quantize(Decimal("0.0001"))

    @property
    def cost(self) -> Decimal:
        return (Decimal(self.seconds) / 3600 * self.price_per_hour).quantize(Decimal("0.01"))

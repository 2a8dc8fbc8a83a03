from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from labgpu.core.models import BaseModel


class Quota(BaseModel):
    """GPU-hours a lab may use on one instance type in one calendar month (UTC).

    Invariant I-2: committed + consumed hours never exceed `gpu_hours`; booking services lock this
    row (SELECT … FOR UPDATE) in the transaction that books against it.
    """

    lab = models.ForeignKey("accounts.Lab", on_delete=models.CASCADE, related_name="quotas")
    instance_type = models.ForeignKey(
        "catalog.InstanceType", on_delete=models.CASCADE, related_name="quotas"
    )
    month = models.DateField(help_text=_("First day of the month"))
    gpu_hours = models.DecimalField(
        max_digits=12, decimal_places=2, validators=[MinValueValidator(0)]
    )

    # The highest usage threshold (80, 100 %) lab admins were already told about this month.
    notified_percent = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["month", "lab_id", "instance_type_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["lab", "instance_type", "month"], name="quota_unique_lab_type_month"
            ),
            models.CheckConstraint(condition=Q(gpu_hours__gte=0), name="quota_non_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.lab} · {self.instance_type} · {self.month:%Y-%m}: {self.gpu_hours} GPU-h"


class QuotaRequest(BaseModel):
    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")

    lab = models.ForeignKey("accounts.Lab", on_delete=models.CASCADE, related_name="quota_requests")
    instance_type = models.ForeignKey(
        "catalog.InstanceType", on_delete=models.CASCADE, related_name="quota_requests"
    )
    month = models.DateField()
    gpu_hours = models.DecimalField(
        max_digits=12,
        decimal_places=2,
        validators=[MinValueValidator(0.01)],
        help_text=_("Additional GPU-hours requested"),
    )
    reason = models.CharField(max_length=1000, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.CharField(max_length=1000, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.lab} asks +{self.gpu_hours} GPU-h {self.instance_type} {self.month:%Y-%m}"

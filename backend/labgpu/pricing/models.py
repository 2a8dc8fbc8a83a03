"""Prices in force over time, in USD as exact decimals (never float).

Each row is the price from `effective_from` until the next row of the same instance type (or
volumes): a change never rewrites a row, so what a second cost when it ran can always be looked
up again. A row carries the provider's list price and the site admin's adjustment in force with
it, so a sync and an adjustment both write one new row and metering needs one lookup.
"""

from decimal import Decimal

from django.db import models
from django.utils.translation import gettext_lazy as _

from labgpu.core.models import BaseModel


class PriceSource(models.TextChoices):
    SYNC = "sync", _("Provider price list")
    ADJUSTMENT = "adjustment", _("Site admin adjustment")
    CATALOG = "catalog", _("Catalog price (before the first sync)")
    SETTING = "setting", _("Configured list price")


class InstanceTypePrice(BaseModel):
    """The hourly price of one droplet of `instance_type` from `effective_from` on.

    `price_hourly` is what a lab pays: the provider's `price_hourly` (from `GET /v2/sizes`) with
    `adjustment_pct` applied (−10 = a 10 % institutional discount, 5 = a 5 % markup).
    """

    instance_type = models.ForeignKey(
        "catalog.InstanceType", on_delete=models.PROTECT, related_name="prices"
    )
    effective_from = models.DateTimeField()
    provider_price_hourly = models.DecimalField(max_digits=12, decimal_places=5)
    provider_price_monthly = models.DecimalField(max_digits=12, decimal_places=2, null=True)
    adjustment_pct = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal(0))
    price_hourly = models.DecimalField(max_digits=12, decimal_places=5)
    source = models.CharField(max_length=16, choices=PriceSource.choices)

    class Meta:
        ordering = ["instance_type_id", "-effective_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["instance_type", "effective_from"], name="price_once_per_instant"
            ),
            models.CheckConstraint(
                condition=models.Q(provider_price_hourly__gte=0, price_hourly__gte=0),
                name="price_not_negative",
            ),
            models.CheckConstraint(
                condition=models.Q(adjustment_pct__gte=-100, adjustment_pct__lte=1000),
                name="price_adjustment_bounded",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.instance_type_id} ${self.price_hourly}/h from {self.effective_from:%Y-%m-%d}"


class VolumePrice(BaseModel):
    """The block-storage price per GB-month (730 hours) from `effective_from` on."""

    effective_from = models.DateTimeField(unique=True)
    price_gb_month = models.DecimalField(max_digits=10, decimal_places=5)
    source = models.CharField(max_length=16, choices=PriceSource.choices)

    class Meta:
        ordering = ["-effective_from"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(price_gb_month__gte=0), name="volume_price_not_negative"
            )
        ]

    def __str__(self) -> str:
        return f"${self.price_gb_month}/GB-month from {self.effective_from:%Y-%m-%d}"


class DisplayCurrency(BaseModel):
    """An optional currency amounts are also shown in: `rate` units of it per US dollar, as the
    site admin set it on `rate_date`. The latest row is in force; `code` empty = USD only."""

    code = models.CharField(max_length=3, blank=True)
    rate = models.DecimalField(max_digits=14, decimal_places=6, null=True)
    rate_date = models.DateField(null=True)
    set_by = models.ForeignKey(
        "accounts.User", on_delete=models.SET_NULL, null=True, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(code="") | models.Q(rate__gt=0, rate_date__isnull=False),
                name="display_currency_has_rate",
            )
        ]

    def __str__(self) -> str:
        return f"{self.code or 'USD'} {self.rate or ''}"

"""Money a lab may spend on GPU time, and the cost centres (grant or project codes) it books to.

Invariant I-11: while a hard budget is in force, consumed + forecast + committed cost of its lab
(or cost centre) in a period never exceeds `amount`. The booking rules lock the budget row
(SELECT … FOR UPDATE) in the transaction that books against it (budgets.selectors,
docs/budgets.md defines the three terms).
"""

from datetime import UTC, date, datetime, timedelta

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from labgpu.core.models import BaseModel
from labgpu.core.timeutils import month_bounds, month_start, next_month


class CostCentre(BaseModel):
    """A grant or project code of one lab; a booking carries one (`Booking.cost_centre`)."""

    lab = models.ForeignKey("accounts.Lab", on_delete=models.CASCADE, related_name="cost_centres")
    code = models.CharField(max_length=64)
    name = models.CharField(max_length=200, blank=True)
    # A retired code keeps its bookings and usage; nothing new is booked to it.
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["lab_id", "code"]
        constraints = [
            models.UniqueConstraint(fields=["lab", "code"], name="cost_centre_unique_lab_code")
        ]

    def __str__(self) -> str:
        return f"{self.lab} · {self.code}"


class Budget(BaseModel):
    """What a lab, or one of its cost centres, may spend per calendar month (UTC) or over one
    custom period [starts_on, ends_on] (whole UTC days, both included)."""

    class Period(models.TextChoices):
        MONTH = "month", _("Every month")
        CUSTOM = "custom", _("Custom period")

    class Enforcement(models.TextChoices):
        SOFT = "soft", _("Soft: warn")
        HARD = "hard", _("Hard: refuse bookings over it")

    lab = models.ForeignKey("accounts.Lab", on_delete=models.CASCADE, related_name="budgets")
    cost_centre = models.ForeignKey(
        CostCentre, null=True, blank=True, on_delete=models.CASCADE, related_name="budgets"
    )
    period = models.CharField(max_length=8, choices=Period.choices, default=Period.MONTH)
    starts_on = models.DateField(null=True, blank=True)
    ends_on = models.DateField(null=True, blank=True)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    # The provider's currency: every price LabGPU knows is in it.
    currency = models.CharField(max_length=3, default="USD")
    enforcement = models.CharField(
        max_length=4, choices=Enforcement.choices, default=Enforcement.SOFT
    )

    class Meta:
        ordering = ["lab_id", "cost_centre_id", "id"]
        constraints = [
            # One budget per lab, and one per cost centre: the rule adds up at most two.
            models.UniqueConstraint(
                fields=["lab"], condition=Q(cost_centre__isnull=True), name="budget_one_per_lab"
            ),
            models.UniqueConstraint(fields=["cost_centre"], name="budget_one_per_cost_centre"),
            models.CheckConstraint(condition=Q(amount__gte=0), name="budget_amount_non_negative"),
            models.CheckConstraint(
                condition=Q(period="month")
                | (Q(starts_on__isnull=False) & Q(ends_on__gte=models.F("starts_on"))),
                name="budget_custom_period_has_dates",
            ),
        ]

    def __str__(self) -> str:
        scope = self.cost_centre.code if self.cost_centre_id else self.lab  # type: ignore[union-attr]
        return f"{scope}: {self.amount} {self.currency} ({self.period})"

    def periods(self, start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
        """The budget's periods that [start, end) touches, as UTC instants [begin, end)."""
        if self.period == self.Period.CUSTOM:
            begin, stop = self.custom_bounds()
            return [(begin, stop)] if begin < end and stop > start else []
        months: list[date] = [month_start(start)]
        while month_bounds(months[-1])[1] < end:
            months.append(next_month(months[-1]))
        return [month_bounds(month) for month in months]

    def custom_bounds(self) -> tuple[datetime, datetime]:
        assert self.starts_on is not None and self.ends_on is not None
        first, last = self.starts_on, self.ends_on + timedelta(days=1)
        return (
            datetime(first.year, first.month, first.day, tzinfo=UTC),
            datetime(last.year, last.month, last.day, tzinfo=UTC),
        )


class BudgetAlert(models.Model):
    """A threshold (50, 80, 100 %) of one budget period its lab admins were told of: once each
    (the unique constraint; rows are written under the budget's lock)."""

    budget = models.ForeignKey(Budget, on_delete=models.CASCADE, related_name="alerts")
    period_start = models.DateTimeField()
    percent = models.PositiveSmallIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["budget", "period_start", "percent"], name="budget_alert_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.budget_id} {self.period_start:%Y-%m-%d} {self.percent} %"

"""What a budget has spent, and prices.

docs/budgets.md defines the terms. For a budget period [begin, end) and the bookings of its lab
(a cost centre's budget: of that cost centre) that overlap it:

- consumed: bookings that ran and stopped (ending, completed): their metered cost (`actual_cost`)
  apportioned to the part of [start, actual end) inside the period; before metering, that time
  at the hourly price;
- forecast: running bookings (provisioning, ready) from their start to their end, inside the
  period, at the hourly price: what they cost if they run to the end they hold;
- committed: bookings not yet started (pending, scheduled), their [start, end) inside the
  period at the hourly price.

Amounts are Decimal in the budget's currency (the provider's, USD) and never float.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from django.db.models import QuerySet

from labgpu.accounts.models import Membership
from labgpu.accounts.selectors import lab_ids_of
from labgpu.bookings.models import Booking
from labgpu.budgets.models import Budget, BudgetAlert, CostCentre
from labgpu.catalog.models import InstanceType
from labgpu.core.rows import prepared_cursor
from labgpu.core.timeutils import overlap
from labgpu.pricing.selectors import price_of

CENTS = Decimal("0.01")
SECONDS_PER_HOUR = Decimal(3600)
THRESHOLDS = (50, 80, 100)  # percent of a budget period at which its lab's admins hear about it


def hourly_price(
    instance_type: InstanceType | int, *, prices: dict[int, Decimal] | None = None
) -> Decimal:
    """What one node of the instance type costs per hour now, in USD (`prices` caches per call).

    The one place budgets read a price: the pricing module's price in force now
    (labgpu.pricing.price_of: the provider's with the site admin's adjustment, else the catalog's).
    """
    type_id = instance_type if isinstance(instance_type, int) else instance_type.pk
    if prices is not None and type_id in prices:
        return prices[type_id]
    value = price_of(instance_type)
    if prices is not None:
        prices[type_id] = value
    return value


def money(amount: Decimal) -> Decimal:
    return amount.quantize(CENTS, rounding=ROUND_HALF_UP)


def _sql_list(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{value}'" for value in values) + ")"


_CONSUMED = _sql_list(Booking.CONSUMING_STATUSES)
# When a booking that stopped really ended (Booking.actual_end), in SQL.
_ACTUAL_END = (
    'CASE WHEN b.ended_at IS NULL OR b.ended_at >= b."end" THEN b."end" '
    "ELSE GREATEST(b.ended_at, b.start) END"
)
_RUN_END = f'CASE WHEN b.status IN {_CONSUMED} THEN {_ACTUAL_END} ELSE b."end" END'
_INSIDE = (
    f"GREATEST(0, EXTRACT(EPOCH FROM LEAST({_RUN_END}, %(end)s) - GREATEST(b.start, %(begin)s)))"
)
_METERED = f"(b.status IN {_CONSUMED} AND b.actual_cost IS NOT NULL)"
# Seconds inside the period by status and instance type (priced in Python through hourly_price),
# and the metered cost apportioned to the period. Through the GiST index `booking_lab_period`,
# like the quota's usage (quotas.selectors).
SPEND_SQL = f"""
SELECT b.status, p.instance_type_id,
       SUM({_INSIDE}) FILTER (WHERE NOT {_METERED}),
       SUM(b.actual_cost * {_INSIDE}
           / NULLIF(EXTRACT(EPOCH FROM {_ACTUAL_END} - b.start), 0)) FILTER (WHERE {_METERED})
FROM bookings_booking b
JOIN catalog_nodepool p ON p.id = b.pool_id
WHERE tstzrange(b.start, b."end") && tstzrange(%(begin)s, %(end)s)
  AND b.status IN {_sql_list(Booking.QUOTA_STATUSES)}
  AND b.lab_id = %(lab)s::bigint
  AND (%(cost_centre)s::bigint IS NULL OR b.cost_centre_id = %(cost_centre)s::bigint)
  AND b.id IS DISTINCT FROM %(exclude)s::bigint
GROUP BY b.status, p.instance_type_id
"""  # noqa: S608 - only the model's status constants are formatted in; values are parameters


@dataclass(frozen=True)
class Spend:
    consumed: Decimal
    forecast: Decimal
    committed: Decimal

    @property
    def total(self) -> Decimal:
        return self.consumed + self.forecast + self.committed


def budget_spend(
    budget: Budget,
    begin: datetime,
    end: datetime,
    *,
    exclude_booking_id: int | None = None,
    prices: dict[int, Decimal] | None = None,
) -> Spend:
    """Consumed, forecast and committed cost of `budget`'s bookings inside [begin, end).

    Read from the database in the caller's transaction: bookings it wrote already (a series'
    earlier occurrences) count."""
    return spend_tally(budget, begin, end, exclude_booking_id=exclude_booking_id).spend(prices)


@dataclass
class SpendTally:
    """A budget period's spend as SPEND_SQL sums it, kept by (status, instance type): a booking
    written since it was read (a series' earlier occurrence, in the same transaction) is `add`ed
    to its group, so `spend()` is what the statement would answer now."""

    begin: datetime
    end: datetime
    # (status, instance type id) -> [seconds inside the period, metered cost]
    rows: dict[tuple[str, int], list[Decimal]] = field(default_factory=dict)

    def add(self, *, status: str, instance_type_id: int, start: datetime, end: datetime) -> None:
        """A booking not yet started (nothing metered): its [start, end) inside the period."""
        inside = overlap(start, end, self.begin, self.end)
        if inside > timedelta(0):
            row = self.rows.setdefault((status, instance_type_id), [Decimal(0), Decimal(0)])
            row[0] += Decimal(inside // timedelta(microseconds=1)) / 1_000_000

    def spend(self, prices: dict[int, Decimal] | None = None) -> Spend:
        prices = {} if prices is None else prices
        consumed = forecast = committed = Decimal(0)
        for (status, instance_type_id), (seconds, metered) in self.rows.items():
            cost = Decimal(metered or 0)
            if seconds:
                cost += (
                    Decimal(seconds)
                    / SECONDS_PER_HOUR
                    * hourly_price(instance_type_id, prices=prices)
                )
            if status in Booking.CONSUMING_STATUSES:
                consumed += cost
            elif status in Booking.NODELESS_STATUSES:
                committed += cost
            else:
                forecast += cost
        return Spend(consumed=consumed, forecast=forecast, committed=committed)


def spend_tally(
    budget: Budget, begin: datetime, end: datetime, *, exclude_booking_id: int | None = None
) -> SpendTally:
    """`budget_spend`'s read, before it is priced and summed up (SpendTally)."""
    with prepared_cursor() as cursor:
        cursor.execute(
            SPEND_SQL,
            {
                "lab": budget.lab_id,
                "cost_centre": budget.cost_centre_id,
                "begin": begin,
                "end": end,
                "exclude": exclude_booking_id,
            },
        )
        rows = cursor.fetchall()
    return SpendTally(
        begin=begin,
        end=end,
        rows={
            (status, instance_type_id): [Decimal(seconds or 0), Decimal(metered or 0)]
            for status, instance_type_id, seconds, metered in rows
        },
    )


@dataclass
class BudgetPeriod:
    """One period of a locked budget that a booking touches: what is spent without the booking,
    and what the booking would add (`needed`)."""

    budget: Budget
    begin: datetime
    end: datetime
    spend: Spend
    needed: Decimal = Decimal(0)
    alerted: set[int] = field(default_factory=set)

    @property
    def left(self) -> Decimal:
        return max(Decimal(0), self.budget.amount - self.spend.total)

    @property
    def percent_after(self) -> Decimal:
        if self.budget.amount <= 0:
            return Decimal(100)
        return (self.spend.total + self.needed) * 100 / self.budget.amount


def budgets_lock(*, lab_id: int, cost_centre_id: int | None) -> list[Budget]:
    """The lab's budget and the cost centre's, locked in id order (parallel bookings of one lab
    queue here: I-11), with their cost centres."""
    budgets = Budget.objects.select_for_update(of=("self",)).select_related("cost_centre")
    mine = [
        budget
        for budget in budgets.filter(lab_id=lab_id).order_by("id")
        if budget.cost_centre_id is None or budget.cost_centre_id == cost_centre_id
    ]
    return mine


def budget_alerted(budget_periods: list[BudgetPeriod]) -> None:
    """Fill each period's thresholds already told (one query)."""
    if not budget_periods:
        return
    rows = BudgetAlert.objects.filter(
        budget_id__in={p.budget.pk for p in budget_periods},
        period_start__in={p.begin for p in budget_periods},
    ).values_list("budget_id", "period_start", "percent")
    for period in budget_periods:
        period.alerted = {
            percent
            for budget_id, start, percent in rows
            if budget_id == period.budget.pk and start == period.begin
        }


def budget_raisers(lab_id: int) -> list[str]:
    """Who can raise the lab's budget: its lab admins, by name."""
    admins = Membership.objects.filter(
        lab_id=lab_id, role=Membership.Role.LAB_ADMIN
    ).select_related("user")
    return sorted(m.user.get_full_name() or m.user.username for m in admins)


def budget_current(budget: Budget, moment: datetime) -> BudgetPeriod:
    """The budget's period around `moment` (a custom one: its own, before, during or after) and
    what is spent in it, for the API and the dashboard."""
    if budget.period == Budget.Period.CUSTOM:
        begin, end = budget.custom_bounds()
    else:
        begin, end = budget.periods(moment, moment)[0]
    return BudgetPeriod(budget=budget, begin=begin, end=end, spend=budget_spend(budget, begin, end))


def cost_centres_visible_to(user) -> QuerySet[CostCentre]:  # type: ignore[no-untyped-def]
    """Site admins: all; everyone else: the cost centres of their labs."""
    centres = CostCentre.objects.all()
    if user.is_site_admin:
        return centres
    return centres.filter(lab_id__in=lab_ids_of(user))


def budgets_visible_to(user) -> QuerySet[Budget]:  # type: ignore[no-untyped-def]
    """Members see their labs' budgets (the dashboard's bar); site admins all."""
    budgets = Budget.objects.select_related("lab", "cost_centre")
    if user.is_site_admin:
        return budgets
    return budgets.filter(lab_id__in=lab_ids_of(user))

"""A lab's monthly statement, built from the ledger: GPU lines per user, cost centre and pool
from the usage periods of the month (each already priced at the price in force, to the cent),
storage lines per user from the month's storage records (each volume rounded once to the cent).
The totals are sums of the lines, and the lines sums of ledger rows: nothing is re-priced here.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal

from django.db.models import Max, Q, Sum
from django.utils import timezone

from labgpu.accounts.models import Lab
from labgpu.pricing.selectors import Conversion, display_currency, to_cents
from labgpu.provisioning.models import Node, Volume
from labgpu.provisioning.selectors import volume_payer
from labgpu.usage.models import StorageUsage, UsagePeriod


def month_bounds(month: date) -> tuple[datetime, datetime]:
    start = datetime(month.year, month.month, 1, tzinfo=UTC)
    end = datetime(month.year + (month.month == 12), month.month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def previous_month(today: date) -> date:
    return date(today.year - (today.month == 1), (today.month - 2) % 12 + 1, 1)


def month_usage_open(*, lab: Lab, month: date) -> list[str]:
    """What of `lab`'s use in `month` the ledger does not hold yet (empty: the month is closed).

    A droplet is in the ledger only once the provider confirmed it gone (labgpu.provisioning's
    node_meter writes its one usage record, cut at month starts), so a droplet that ran in the
    month and has no record yet is open; a volume is open until the hourly storage meter has
    recorded it up to the month's end (or its deletion). The metering's own rows decide, not
    the clock: a statement built earlier would leave out the month's last hours."""
    start, end = month_bounds(month)
    open_items: list[str] = []
    droplets = (
        Node.objects.filter(booking__lab=lab, usage_records__isnull=True)
        .exclude(provider_id="")
        .filter(
            Q(provider_created_at__lt=end) | Q(provider_created_at__isnull=True, created_at__lt=end)
        )
        # A node destroyed without a creation time never made a billed droplet (node_meter).
        .exclude(status=Node.Status.DESTROYED, provider_created_at__isnull=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    open_items += [f"node {pk}: droplet not metered yet" for pk in droplets]
    volumes = (
        Volume.objects.exclude(provider_id="")
        .filter(created_at__lt=end)
        .exclude(deleted_at__lte=start)
        .select_related("last_attached_node__booking")
        .annotate(metered_to=Max("storage_usage__ended_at"))
        .order_by("pk")
    )
    for volume in volumes:
        needed = min(end, volume.deleted_at) if volume.deleted_at else end
        if volume.metered_to is not None and volume.metered_to >= needed:
            continue
        if volume_payer(volume)[0] == lab.pk:
            open_items.append(f"volume {volume.pk}: storage metered to {volume.metered_to}")
    return open_items


@dataclass
class Line:
    kind: str  # "gpu" | "storage"
    user: str
    cost_centre: str
    pool: str
    quantity: Decimal  # GPU-hours or GB-months
    amount: Decimal  # USD, to the cent


@dataclass
class Statement:
    lab: Lab
    month: date
    generated_at: datetime
    lines: list[Line] = field(default_factory=list)
    conversion: Conversion | None = None

    @property
    def gpu_total(self) -> Decimal:
        return sum((line.amount for line in self.lines if line.kind == "gpu"), Decimal("0.00"))

    @property
    def storage_total(self) -> Decimal:
        return sum((line.amount for line in self.lines if line.kind == "storage"), Decimal("0.00"))

    @property
    def total(self) -> Decimal:
        return self.gpu_total + self.storage_total

    def converted(self, usd: Decimal) -> Decimal | None:
        return self.conversion.convert(usd) if self.conversion else None


def statement_build(*, lab: Lab, month: date) -> Statement:
    start, end = month_bounds(month)
    statement = Statement(
        lab=lab,
        month=date(month.year, month.month, 1),
        generated_at=timezone.now(),
        conversion=display_currency(),
    )
    # Periods are cut at UTC month starts, so a period starting in the month lies in it.
    periods = UsagePeriod.objects.filter(
        record__lab=lab, record__charged_to_lab=True, started_at__gte=start, started_at__lt=end
    )
    # The booking's cost centre (labgpu.budgets); "" for a booking that carries none.
    keys = ["record__user__username", "record__pool__name", "record__booking__cost_centre__code"]
    gpu: dict[tuple, dict] = defaultdict(lambda: {"seconds": Decimal(0), "amount": Decimal(0)})
    for row in periods.values(*keys, "seconds", "record__gpu_count", "cost"):
        key = (
            row["record__user__username"],
            row["record__booking__cost_centre__code"] or "",
            row["record__pool__name"],
        )
        gpu[key]["seconds"] += Decimal(row["seconds"]) * row["record__gpu_count"]
        gpu[key]["amount"] += row["cost"]
    for (user, centre, pool), sums in sorted(gpu.items()):
        statement.lines.append(
            Line(
                kind="gpu",
                user=user,
                cost_centre=centre,
                pool=pool,
                quantity=(sums["seconds"] / 3600).quantize(Decimal("0.01")),
                amount=sums["amount"],
            )
        )
    # Storage: each volume's month rounded once, then summed per user.
    storage: dict[str, dict] = defaultdict(lambda: {"gb_months": Decimal(0), "amount": Decimal(0)})
    volumes = (
        StorageUsage.objects.filter(lab=lab, started_at__gte=start, started_at__lt=end)
        .values("volume_id", "user__username")
        .annotate(cost=Sum("cost"), gb_months=Sum("gb_months"))
        .order_by("volume_id", "user__username")
    )
    for row in volumes:
        user = row["user__username"] or ""
        storage[user]["gb_months"] += row["gb_months"]
        storage[user]["amount"] += to_cents(row["cost"])
    for user, sums in sorted(storage.items()):
        statement.lines.append(
            Line(
                kind="storage",
                user=user,
                cost_centre="",
                pool="",
                quantity=sums["gb_months"].quantize(Decimal("0.01")),
                amount=sums["amount"],
            )
        )
    return statement

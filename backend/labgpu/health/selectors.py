from collections import defaultdict
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Max

from labgpu.catalog.models import InstanceType
from labgpu.health.limits import smoke_value
from labgpu.health.models import HealthReport, UtilisationSample
from labgpu.usage.models import BookingUtilisation

BASELINE_NODES = 50


def instance_type_baselines(
    instance_type: InstanceType, *, nodes: int = BASELINE_NODES
) -> dict[str, Any]:
    """Each smoke metric's baseline over the latest passing report of the last `nodes` nodes.

    Built to survive hostile reports (I-9): whoever has root on a node holds its agent token.
    - only finite values inside the metric's physical range count (`smoke_value`), so no stored
      row, even one written before the bounds existed, can make this fail or overflow;
    - one vote per node (its latest passing report), so a node that reports a thousand times
      weighs what a node that reported once does, and cannot push the others out of the window;
    - each lab's nodes share one weight, and the baseline is the weighted median of the nodes'
      values: a lab can move it only within the range the other labs' values span, never beyond
      (with two labs the lower of the two middle values is taken).
    Keys are `name:metric` (e.g. `llm:tokens_per_s_batch1`), as the agent names its baselines.
    """
    latest_per_node = (
        HealthReport.objects.filter(instance_type=instance_type, verdict__in=HealthReport.PASSING)
        .values("node_id")
        .annotate(latest=Max("id"))
        .order_by("-latest")
        .values("latest")[:nodes]
    )
    rows = HealthReport.objects.filter(id__in=latest_per_node).values_list(
        "node__booking__lab_id", "smoke"
    )
    # metric key -> lab -> [values of that lab's nodes]
    by_metric: dict[str, dict[Any, list[float]]] = defaultdict(lambda: defaultdict(list))
    units: dict[str, tuple[str, str]] = {}
    for lab_id, smoke in rows:
        seen: set[str] = set()
        for result in smoke if isinstance(smoke, list) else []:
            read = smoke_value(result)
            if read is None:
                continue
            name, metric, unit, value = read
            key = f"{name}:{metric}"
            if key in seen:
                continue  # one value per node and metric
            seen.add(key)
            units.setdefault(key, (metric, unit))
            by_metric[key][lab_id].append(value)
    return {
        key: {
            "metric": units[key][0],
            "unit": units[key][1],
            "median": round(_lab_weighted_median(labs), 3),
            "samples": sum(len(values) for values in labs.values()),
        }
        for key, labs in sorted(by_metric.items())
    }


def _lab_weighted_median(labs: dict[Any, list[float]]) -> float:
    """The lower weighted median, each lab weighing 1 in total, shared by its nodes."""
    weighted = sorted((value, 1 / len(values)) for values in labs.values() for value in values)
    half, running = len(labs) / 2, 0.0
    for value, weight in weighted:
        running += weight
        if running >= half - 1e-9:
            return value
    return weighted[-1][0]


def booking_utilisation(booking: Any, *, samples: int = 360) -> dict[str, Any]:
    """The booking's totals, idle state and latest chart samples (oldest first)."""
    totals = BookingUtilisation.objects.filter(booking=booking).first()
    pool = booking.pool
    policy = (
        {"idle_minutes": pool.idle_reclaim_minutes, "grace_minutes": pool.idle_grace_minutes}
        if pool.idle_reclaim_minutes is not None
        else None
    )
    warned = totals.idle_warned_at if totals else None
    minute_s = float(settings.LABGPU_IDLE_MINUTE_S)
    rows = list(UtilisationSample.objects.filter(booking=booking).order_by("-at")[:samples])[::-1]
    return {
        "booking": booking.pk,
        "average_utilisation_pct": totals.average_utilisation_pct if totals else None,
        "used_hours": totals.used_hours if totals else 0.0,
        "observed_hours": round(totals.observed_s / 3600, 4) if totals else 0.0,
        "last_sample_at": totals.last_sample_at if totals else None,
        "last_active_at": totals.last_active_at if totals else None,
        "idle_warned_at": warned,
        "idle_ends_at": warned + timedelta(seconds=pool.idle_grace_minutes * minute_s)
        if warned and policy
        else None,
        "idle_policy": policy,
        "samples": rows,
    }

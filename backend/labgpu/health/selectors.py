from statistics import median
from typing import Any

from labgpu.catalog.models import InstanceType
from labgpu.health.models import HealthReport

BASELINE_WINDOW = 20


def instance_type_baselines(
    instance_type: InstanceType, *, window: int = BASELINE_WINDOW
) -> dict[str, Any]:
    """Rolling median of each smoke metric over the last `window` passing reports of the type."""
    reports = HealthReport.objects.filter(
        instance_type=instance_type, verdict__in=HealthReport.PASSING
    ).order_by("-created_at")[:window]
    samples: dict[str, dict[str, Any]] = {}
    for report in reports:
        for result in report.smoke:
            if result.get("status") != "passed" or result.get("value") is None:
                continue
            entry = samples.setdefault(
                result["name"],
                {"metric": result.get("metric", ""), "unit": result.get("unit", ""), "values": []},
            )
            entry["values"].append(float(result["value"]))
    return {
        name: {
            "metric": entry["metric"],
            "unit": entry["unit"],
            "median": round(median(entry["values"]), 3),
            "samples": len(entry["values"]),
        }
        for name, entry in samples.items()
    }

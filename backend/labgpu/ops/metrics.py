"""Prometheus metrics.

- Gauges of bookings by status and nodes by state, counted by a beat task every 30 s into the
  cache; a scrape reads that snapshot and never queries the database.
- Counters and a histogram updated where the work happens: provider HTTP requests and errors
  (`InstrumentedTransport` in labgpu.providers.metrics, an httpx transport for the provider
  driver) and Celery task latencies (`labgpu.ops.signals`).

Web and worker processes are separate, so counters written by workers only reach `/metrics` in
prometheus-client's multiprocess mode: set PROMETHEUS_MULTIPROC_DIR to a directory every process
shares (docker-compose.yml does; it must be emptied when the stack starts). Without it each
process keeps its own counters, which is what tests and `make run` use.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from labgpu.bookings.models import Booking
from labgpu.providers import metrics as provider_metrics  # noqa: F401  (its counters, on /metrics)
from labgpu.provisioning.models import Node

TASK_LATENCY = Histogram(
    "labgpu_task_duration_seconds",
    "Celery task run time, from task_prerun to task_postrun, by task and final state.",
    ["task", "state"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, float("inf")),
)

STATE_GAUGES_KEY = "metrics:state-gauges"


def state_gauges_refresh() -> dict:
    """Count bookings by status and nodes by state (two queries) into the shared cache, where
    every web process's /metrics reads them. Run by beat (`refresh-state-gauges`), so a scrape
    never touches the database however often Prometheus, or anyone else, asks."""
    from django.core.cache import cache
    from django.db.models import Count

    snapshot: dict = {"at": time.time()}
    for name, model in (("bookings", Booking), ("nodes", Node)):
        counts = dict.fromkeys(model.Status.values, 0)
        for row in model.objects.values("status").annotate(n=Count("id")).order_by():
            counts[row["status"]] = row["n"]
        snapshot[name] = counts
    cache.set(STATE_GAUGES_KEY, snapshot, timeout=None)
    return snapshot


class StateGaugesCollector(Collector):
    """Bookings by status and nodes by state, from the snapshot state_gauges_refresh() left in
    the cache (one cache read per scrape, no database). Absent until beat has run it once;
    `labgpu_state_gauges_updated_timestamp_seconds` tells how fresh they are."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from django.core.cache import cache

        snapshot = cache.get(STATE_GAUGES_KEY)
        if not snapshot:
            return
        for name, doc, label in (
            ("bookings", "Bookings by status.", "status"),
            ("nodes", "Nodes by state.", "state"),
        ):
            family = GaugeMetricFamily(f"labgpu_{name}", doc, labels=[label])
            for value, count in sorted(snapshot[name].items()):
                family.add_metric([value], count)
            yield family
        yield GaugeMetricFamily(
            "labgpu_state_gauges_updated_timestamp_seconds",
            "When labgpu_bookings and labgpu_nodes were last counted (Unix time).",
            value=snapshot["at"],
        )

    def describe(self) -> list:
        return []  # collect() needs the cache: never at registration


_state_gauges = StateGaugesCollector()


def scrape() -> bytes:
    """The exposition text for /metrics."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = CollectorRegistry()
        registry.register(_ProcessMetrics())
    registry.register(_state_gauges)
    return generate_latest(registry)


class _ProcessMetrics(Collector):
    """This process's own metrics (the default registry) next to the database gauges."""

    def collect(self) -> Iterator:
        yield from REGISTRY.collect()

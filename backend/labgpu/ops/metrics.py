"""Prometheus metrics.

- Gauges of bookings by status and nodes by state, counted by a beat task every 30 s into the
  cache; a scrape reads that snapshot and never queries the database.
- Counters and a histogram updated where the work happens: provider HTTP requests and errors
  (`InstrumentedTransport`, an httpx transport for the provider driver) and Celery task
  latencies (`labgpu.ops.signals`).

Web and worker processes are separate, so counters written by workers only reach `/metrics` in
prometheus-client's multiprocess mode: set PROMETHEUS_MULTIPROC_DIR to a directory every process
shares (docker-compose.yml does; it must be emptied when the stack starts). Without it each
process keeps its own counters, which is what tests and `make run` use.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator

import httpx
from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

PROVIDER_REQUESTS = Counter(
    "labgpu_provider_requests",
    "HTTP requests sent to the cloud provider API, by method, route and status code "
    "(status 'error': no response, e.g. a timeout).",
    ["method", "route", "status"],
)
PROVIDER_ERRORS = Counter(
    "labgpu_provider_errors",
    "Provider requests that failed: kind is http_4xx, http_429, http_5xx or the transport "
    "error's class name.",
    ["method", "route", "kind"],
)
PROVIDER_LATENCY = Histogram(
    "labgpu_provider_request_duration_seconds",
    "Provider API request latency.",
    ["method", "route"],
)
TASK_LATENCY = Histogram(
    "labgpu_task_duration_seconds",
    "Celery task run time, from task_prerun to task_postrun, by task and final state.",
    ["task", "state"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, float("inf")),
)

_ID = re.compile(r"/\d+(?=/|$)")


def route_of(path: str) -> str:
    """`/v2/droplets/123` → `/v2/droplets/{id}`: bounded label cardinality."""
    return _ID.sub("/{id}", path) or "/"


class InstrumentedTransport(httpx.BaseTransport):
    """Counts and times every request the provider driver sends, retries included.

    Usage: `DigitalOceanDriver(..., transport=InstrumentedTransport())`. It wraps the default
    transport, so the client behaves exactly as without it. It never looks at headers: the bearer
    token cannot end up in a label.
    """

    def __init__(self, inner: httpx.BaseTransport | None = None) -> None:
        self._inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        method, route = request.method, route_of(request.url.path)
        started = time.perf_counter()
        try:
            response = self._inner.handle_request(request)
        except httpx.TransportError as exc:
            PROVIDER_REQUESTS.labels(method, route, "error").inc()
            PROVIDER_ERRORS.labels(method, route, type(exc).__name__).inc()
            raise
        finally:
            PROVIDER_LATENCY.labels(method, route).observe(time.perf_counter() - started)
        status = response.status_code
        PROVIDER_REQUESTS.labels(method, route, str(status)).inc()
        if status == 429:
            PROVIDER_ERRORS.labels(method, route, "http_429").inc()
        elif status >= 500:
            PROVIDER_ERRORS.labels(method, route, "http_5xx").inc()
        elif status >= 400 and status != 404:
            # 404 is an answer (gone = destroyed), not a failure.
            PROVIDER_ERRORS.labels(method, route, "http_4xx").inc()
        return response

    def close(self) -> None:
        self._inner.close()


def provider_transport() -> InstrumentedTransport:
    return InstrumentedTransport()


STATE_GAUGES_KEY = "metrics:state-gauges"


def state_gauges_refresh() -> dict:
    """Count bookings by status and nodes by state (two queries) into the shared cache, where
    every web process's /metrics reads them. Run by beat (`refresh-state-gauges`), so a scrape
    never touches the database however often Prometheus, or anyone else, asks."""
    from django.core.cache import cache
    from django.db.models import Count

    from labgpu.bookings.models import Booking
    from labgpu.provisioning.models import Node

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

"""Prometheus counters of the requests the provider driver sends: an httpx transport that counts
and times them (`InstrumentedTransport`). Registered in prometheus-client's default registry, which
`/metrics` (labgpu.ops.metrics) exposes; no Django needed."""

from __future__ import annotations

import re
import time

import httpx
from prometheus_client import Counter, Histogram

from .credentials import egress_transport

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
        self._inner = inner or egress_transport()

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

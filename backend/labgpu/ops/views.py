"""Plain Django views outside /api/ (and outside the OpenAPI schema): liveness, readiness and
Prometheus metrics."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from labgpu.ops.metrics import scrape


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is alive and serving; touches nothing else, so a database outage does not get
    every web container restarted."""
    return JsonResponse({"status": "ok"})


def _check_database() -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")


def _ping_redis(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    finally:
        client.close()


def _check_broker() -> None:
    url = settings.CELERY_BROKER_URL
    if url.startswith(("redis://", "rediss://")):
        _ping_redis(url)
        return
    # The embedded filesystem broker (no CELERY_BROKER_URL): its folders must be writable.
    import os

    for key in ("data_folder_in", "data_folder_out"):
        folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get(key)
        if folder and not os.access(folder, os.W_OK):
            raise OSError(f"broker folder {folder} is not writable")


def readiness() -> dict[str, str]:
    """Each dependency → "ok" or the reason it is not."""
    checks = {"database": _check_database, "broker": _check_broker}
    if settings.REDIS_URL:
        checks["redis"] = lambda: _ping_redis(settings.REDIS_URL)
    results = {}
    for name, check in checks.items():
        try:
            check()
        except Exception as exc:
            results[name] = f"{type(exc).__name__}: {exc}"[:300]
        else:
            results[name] = "ok"
    return results


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when the database and Redis/broker answer, else 503 with the reasons."""
    checks = readiness()
    ready = all(value == "ok" for value in checks.values())
    return JsonResponse(
        {"status": "ok" if ready else "unavailable", "checks": checks},
        status=200 if ready else 503,
    )


def _error(status: int, message: str, code: str) -> JsonResponse:
    return JsonResponse({"message": message, "code": code, "extra": {}}, status=status)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus exposition. Cheap by construction (no database query: the state gauges come
    from a snapshot beat refreshes), and in production only for holders of the metrics token."""
    token = settings.LABGPU_METRICS_TOKEN
    if not token and settings.LABGPU_METRICS_REQUIRE_TOKEN:
        return _error(
            404, "Metrics are off: set LABGPU_METRICS_TOKEN to serve them.", "metrics_disabled"
        )
    if token:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), token.encode()):
            response = _error(401, "Send the metrics token as a bearer token.", "not_authenticated")
            response["WWW-Authenticate"] = "Bearer"
            return response
    return HttpResponse(scrape(), content_type="text/plain; version=0.0.4; charset=utf-8")

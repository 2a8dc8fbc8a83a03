"""/healthz, /readyz, /metrics, request ids and task ids on structured log lines."""

from __future__ import annotations

import json
import logging
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from prometheus_client.parser import text_string_to_metric_families

from conftest import client_for
from labgpu.bookings.models import Booking
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.ops.logging import ContextFilter, JsonFormatter
from labgpu.ops.tasks import refresh_state_gauges
from labgpu.providers.metrics import InstrumentedTransport, route_of
from labgpu.provisioning.models import Node


def scrape(client: Client, **headers: str) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_healthz_answers_without_touching_the_database(client):
    # No django_db mark: any query would raise.
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_is_200_when_database_and_broker_answer(client):
    response = client.get("/readyz")
    assert response.status_code == 200, response.json()
    assert response.json()["checks"]["database"] == "ok"
    assert response.json()["checks"]["broker"] == "ok"


@pytest.mark.django_db
def test_readyz_is_503_with_the_reason_when_redis_is_down(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/1"
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "ok"
    assert "ConnectionError" in body["checks"]["redis"]
    assert "ConnectionError" in body["checks"]["broker"]


@pytest.mark.django_db
def test_readyz_is_503_when_the_database_is_unreachable(client, monkeypatch):
    from labgpu.ops import views

    def broken() -> None:
        raise views.connections["default"].Database.OperationalError("connection refused")

    monkeypatch.setattr(views, "_check_database", broken)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert "connection refused" in response.json()["checks"]["database"]


def test_probes_and_metrics_are_not_in_the_api_schema():
    from pathlib import Path

    schema = (Path(__file__).resolve().parents[3] / "openapi.yaml").read_text()
    for path in ("/healthz", "/readyz", "/metrics"):
        assert f"  {path}:" not in schema


def test_metrics_count_bookings_by_status_and_nodes_by_state_when_beat_refreshes_them(
    client, alice, pool, quotas, tomorrow
):
    refresh_state_gauges()
    before = scrape(client)
    assert sum(v for (name, _), v in before.items() if name == "labgpu_bookings") == 0
    assert before[("labgpu_nodes", (("state", "ready"),))] == 0
    for hours in (0, 2):
        start = tomorrow + timedelta(hours=hours)
        response = client_for(alice).post(
            "/api/v1/bookings/",
            {
                "pool": pool.pk,
                "start": start.isoformat(),
                "end": (start + timedelta(hours=1)).isoformat(),
            },
        )
        assert response.status_code == 201, response.content
    status = Booking.objects.first().status
    assert scrape(client)[("labgpu_bookings", (("status", status),))] == 0  # not yet counted
    refresh_state_gauges()
    after = scrape(client)
    assert after[("labgpu_bookings", (("status", status),))] == 2
    statuses = {s for (name, labels) in after if name == "labgpu_bookings" for _, s in labels}
    assert statuses == set(Booking.Status.values)
    assert {s for (name, labels) in after if name == "labgpu_nodes" for _, s in labels} == set(
        Node.Status.values
    )


@pytest.mark.security
def test_metrics_scrape_runs_no_database_query(client, alice, pool, quotas, tomorrow):
    """Issue 11 item 14: a scrape used to count bookings and nodes in the database each time;
    now it reads the snapshot beat leaves in the cache, so /metrics costs no query."""
    BookingFactory(user=alice, lab=alice.labs.first(), pool=pool, start=tomorrow)
    refresh_state_gauges()
    with CaptureQueriesContext(connection) as queries:
        samples = scrape(client)
        scrape(client)
    assert [q["sql"] for q in queries.captured_queries] == []
    booked = Booking.objects.get()
    assert samples[("labgpu_bookings", (("status", booked.status),))] == 1
    assert samples[("labgpu_state_gauges_updated_timestamp_seconds", ())] > 0


@pytest.mark.django_db
def test_metrics_can_require_a_bearer_token(client, settings):
    settings.LABGPU_METRICS_TOKEN = "scrape-secret"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert scrape(client, HTTP_AUTHORIZATION="Bearer scrape-secret")


class _Provider(BaseHTTPRequestHandler):
    """A provider that answers 200, 500, 429 or 404 by path."""

    def do_GET(self) -> None:
        status = {"/v2/droplets/500": 500, "/v2/droplets/429": 429, "/v2/droplets/7": 404}.get(
            self.path.split("?")[0], 200
        )
        body = json.dumps({"id": "x", "message": "m"}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_provider():
    server = HTTPServer(("127.0.0.1", 0), _Provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.mark.django_db
def test_provider_requests_and_errors_are_counted_by_the_instrumented_transport(
    client, fake_provider
):
    import httpx

    key = ("labgpu_provider_requests_total", (("method", "GET"), ("route", "/v2/droplets/{id}")))

    def count(samples, status):
        return samples.get((key[0], tuple(sorted((*key[1], ("status", status))))), 0)

    before = scrape(client)
    with httpx.Client(base_url=fake_provider, transport=InstrumentedTransport()) as http:
        for path in ("/v2/droplets/1", "/v2/droplets/500", "/v2/droplets/429", "/v2/droplets/7"):
            http.get(path)
    with httpx.Client(transport=InstrumentedTransport()) as http, pytest.raises(httpx.ConnectError):
        http.get("http://127.0.0.1:1/v2/droplets/9")
    after = scrape(client)
    for status in ("200", "500", "429", "404", "error"):
        assert count(after, status) == count(before, status) + 1, status
    errors = {
        labels: v for (name, labels), v in after.items() if name == "labgpu_provider_errors_total"
    }
    kinds = {dict(labels)["kind"] for labels in errors}
    assert {"http_5xx", "http_429", "ConnectError"} <= kinds
    assert "http_4xx" not in kinds or all(dict(k)["kind"] != "http_4xx" for k in errors)
    assert route_of("/v2/droplets/123/actions") == "/v2/droplets/{id}/actions"


@pytest.mark.django_db
def test_the_driver_accepts_the_instrumented_transport(client, fake_provider):
    from labgpu.providers import build_driver

    with build_driver(
        kind="emulator", base_url=fake_provider, token="t", transport=InstrumentedTransport()
    ) as driver:
        driver.list_ours()
    samples = scrape(client)
    assert any(
        name == "labgpu_provider_requests_total" and ("route", "/v2/droplets") in labels
        for name, labels in samples
    )


@pytest.mark.django_db
def test_task_latency_is_observed_through_celery_signals(client, settings):
    from labgpu.provisioning.tasks import expire_stale_pending

    expire_stale_pending.apply()
    samples = scrape(client)
    key = (
        "labgpu_task_duration_seconds_count",
        (("state", "SUCCESS"), ("task", "labgpu.provisioning.tasks.expire_stale_pending")),
    )
    assert samples.get(key, 0) >= 1


def test_request_id_is_accepted_or_minted_and_echoed(client):
    response = client.get("/healthz", HTTP_X_REQUEST_ID="req-1234abcd")
    assert response["X-Request-ID"] == "req-1234abcd"
    minted = client.get("/healthz")["X-Request-ID"]
    assert len(minted) == 32
    forged = client.get("/healthz", HTTP_X_REQUEST_ID='x"}\n{"level": "fake')["X-Request-ID"]
    assert forged != 'x"}\n{"level": "fake' and len(forged) == 32


def json_lines(records: list[logging.LogRecord]) -> list[dict]:
    formatter, context = JsonFormatter(), ContextFilter()
    out = []
    for record in records:
        context.filter(record)
        out.append(json.loads(formatter.format(record)))
    return out


def test_log_lines_during_a_request_carry_its_request_id(rf, caplog):
    from django.http import HttpResponse

    from labgpu.ops.middleware import RequestIdMiddleware

    def view(request):
        logging.getLogger("labgpu.test").info("inside the view")
        return HttpResponse()

    caplog.set_level(logging.INFO)
    RequestIdMiddleware(view)(rf.get("/", HTTP_X_REQUEST_ID="trace-abc-123"))
    logging.getLogger("labgpu.test").info("after the request")
    lines = {line["message"]: line for line in json_lines(caplog.records)}
    assert lines["inside the view"]["request_id"] == "trace-abc-123"
    assert "request_id" not in lines["after the request"]


def test_json_formatter_writes_one_object_per_line_with_extras():
    record = logging.makeLogRecord(
        {"name": "x", "levelname": "INFO", "msg": "hello %s", "args": ("world",), "node_id": 7}
    )
    (line,) = json_lines([record])
    assert line["message"] == "hello world" and line["node_id"] == 7
    assert line["level"] == "INFO" and line["ts"].endswith("+00:00")
    assert "request_id" not in line  # None is left out


def test_log_lines_inside_a_task_carry_its_task_id(caplog):
    from celery import shared_task

    @shared_task(name="labgpu.ops.tests.log_something")
    def log_something() -> None:
        logging.getLogger("labgpu.test").warning("from a task")

    caplog.set_level(logging.INFO)
    result = log_something.apply()
    (line,) = [line for line in json_lines(caplog.records) if line["message"] == "from a task"]
    assert line["task_id"] == result.id
    assert line["task_name"] == "labgpu.ops.tests.log_something"

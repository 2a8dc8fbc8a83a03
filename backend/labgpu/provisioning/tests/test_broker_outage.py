"""Broker outages never fail a request (issue: loop-truth item 3).

Redis is the broker and the cache here, as in production. It is stopped at the moment of each
kind of request — a booking made, extended, ended early, force-ended by a site admin, approved by
a lab admin, an agent's failing report — over real HTTP to the live server. Every answer must be
the normal one (never a 5xx, nothing logged as a server error), and once Redis is back the work
the request asked for is done (the outbox relays it), ending with the provider's ledger exact.
"""

import logging
from datetime import timedelta

import httpx
import pytest

from labgpu.accounts.services import token_create
from labgpu.bookings.models import Booking
from labgpu.catalog.tests.factories import NodePoolFactory
from labgpu.core.models import OutboxMessage
from labgpu.core.outbox import publish_best_effort
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.conftest import on_demand_body
from labgpu.provisioning.tests.harness import wait_for
from labgpu.provisioning.tests.ledger import assert_ledger_exact
from labgpu.provisioning.tests.test_lifecycle import wait_status
from labgpu.provisioning.tokens import bootstrap_token_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


class ServerErrors(logging.Handler):
    """Everything Django logs about requests at ERROR (its log of every 5xx)."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


@pytest.fixture
def server_errors():
    handler = ServerErrors()
    loggers = [logging.getLogger(name) for name in ("django.request", "django.server")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler.records
    for logger in loggers:
        logger.removeHandler(handler)


@pytest.fixture
def redis_cache(settings, redis_server):
    """The live server's cache is the broker's Redis, as in production."""
    settings.CACHES = {
        "default": {
            "BACKEND": "labgpu.ops.cache.ResilientRedisCache",
            "LOCATION": redis_server.url,
        }
    }


class Api:
    def __init__(self, base_url: str, user, scopes=("read", "book")) -> None:
        _, raw = token_create(user=user, name="outage", scopes=list(scopes))
        self.http = httpx.Client(
            base_url=base_url, headers={"Authorization": f"Bearer {raw}"}, timeout=30
        )

    def post(self, path: str, body: dict | None = None) -> httpx.Response:
        return self.http.post(path, json=body or {})


def while_broker_down(world, request):  # type: ignore[no-untyped-def]
    """Make `request()` with Redis stopped; start Redis again; return the response."""
    world.redis.stop()
    try:
        response = request()
    finally:
        world.redis.start()
    assert response.status_code < 500, response.text
    return response


def test_requests_answer_normally_while_the_broker_is_down_and_the_work_is_done_after(
    lifecycle, alice, bob, carol, vision_lab, live_server, redis_cache, server_errors
):
    lifecycle.start_worker()
    lifecycle.supervise()  # a worker may exit when its broker vanishes; a supervisor restarts it
    as_alice = Api(live_server.url, alice)

    # A booking due now: its start is enqueued on commit, with no broker to take it.
    # The on-commit publish fails with the broker away: the outbox row (or the sweep) starts it.
    made = while_broker_down(
        lifecycle, lambda: as_alice.post("/api/v1/bookings/", on_demand_body(lifecycle.pool, 40))
    )
    assert made.status_code == 201, made.text
    booking_id = made.json()["id"]
    wait_status(lifecycle, booking_id, "ready", timeout_s=120)

    end = Booking.objects.get(pk=booking_id).end + timedelta(minutes=10)
    extended = while_broker_down(
        lifecycle,
        lambda: as_alice.post(f"/api/v1/bookings/{booking_id}/extend/", {"end": end.isoformat()}),
    )
    assert extended.status_code == 200, extended.text

    ended = while_broker_down(
        lifecycle, lambda: as_alice.post(f"/api/v1/bookings/{booking_id}/cancel/")
    )
    assert ended.status_code == 200, ended.text
    wait_status(lifecycle, booking_id, "completed", timeout_s=120)

    # A site admin force-ends someone's booking.
    second = as_alice.post("/api/v1/bookings/", on_demand_body(lifecycle.pool, 30)).json()["id"]
    wait_status(lifecycle, second, "ready", timeout_s=120)
    forced = while_broker_down(
        lifecycle,
        lambda: Api(live_server.url, carol, scopes=("read", "book", "admin")).post(
            f"/api/v1/bookings/{second}/cancel/", {"reason": "maintenance"}
        ),
    )
    assert forced.status_code == 200, forced.text
    wait_status(lifecycle, second, "completed", timeout_s=120)

    # A lab admin approves a booking.
    approval_pool = NodePoolFactory(
        instance_type=lifecycle.instance_type, requires_approval=True, max_days_ahead=30
    )
    start = (now() + timedelta(days=2)).replace(minute=0, second=0, microsecond=0)
    pending = as_alice.post(
        "/api/v1/bookings/",
        {
            "pool": approval_pool.pk,
            "start": start.isoformat(),
            "end": (start + timedelta(hours=1)).isoformat(),
        },
    )
    assert pending.status_code == 201, pending.text
    approved = while_broker_down(
        lifecycle,
        lambda: Api(live_server.url, bob, scopes=("read", "book", "admin")).post(
            f"/api/v1/bookings/{pending.json()['id']}/approve/", {"reason": "ok"}
        ),
    )
    assert approved.status_code == 200, approved.text

    # An agent's failing report: the node is failed, its teardown and replacement are enqueued.
    lifecycle.emulator.set_faults(size_profiles={"gpu-mi300x1-192gb": "none"})
    third = as_alice.post("/api/v1/bookings/", on_demand_body(lifecycle.pool, 30)).json()["id"]
    wait_for(
        lambda: Node.objects.filter(booking_id=third, status="booting").exists(),
        timeout_s=120,
        message="the silent node to boot",
    )
    node = Node.objects.get(booking_id=third)
    agent = httpx.Client(base_url=live_server.url, timeout=30)
    boot = agent.post(
        "/api/v1/agent/bootstrap/",
        headers={"Authorization": f"Bearer {bootstrap_token_for(node.pk)}"},
    )
    assert boot.status_code == 200, boot.text
    heartbeat = boot.json()["heartbeat_token"]
    lifecycle.emulator.set_faults(size_profiles={})  # the replacement's agent reports normally
    reported = while_broker_down(
        lifecycle,
        lambda: agent.post(
            "/api/v1/agent/reports/",
            json=failing_report(),
            headers={"Authorization": f"Bearer {heartbeat}"},
        ),
    )
    assert reported.status_code == 201, reported.text
    wait_for(
        lambda: Node.objects.filter(booking_id=third, attempt=2, status="ready").exists(),
        timeout_s=120,
        message="the replacement node",
    )
    node.refresh_from_db()
    assert node.status in ("destroying", "destroyed") or node.failed_at
    lifecycle.emulator.set_faults(size_profiles={})
    as_alice.post(f"/api/v1/bookings/{third}/cancel/")
    wait_status(lifecycle, third, "completed", timeout_s=120)

    wait_for(
        lambda: not OutboxMessage.objects.exists(), timeout_s=60, message="the outbox to drain"
    )
    ledger = assert_ledger_exact(lifecycle.emulator)
    assert len(ledger) == 4  # two bookings' nodes, the failed node and its replacement
    assert server_errors == []
    # Once the broker is back, this process publishes again (kombu's closed pools were dropped)
    # as soon as its breaker's window since the last failure has passed (a setting, scaled).
    wait_for(
        lambda: publish_best_effort("labgpu.core.tasks.relay_outbox"),
        timeout_s=60,
        message="this process to publish again",
    )


def failing_report() -> dict:
    return {
        "schema_version": 1,
        "agent_version": "0.1.0",
        "profile": "mi300x",
        "hostname": "n1",
        "collected_at": now().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "facts": {"gpus": []},
        "verdict": "fail",
        "findings": [
            {
                "id": "ecc.uncorrectable",
                "severity": "fail",
                "message": "Uncorrectable ECC errors",
                "evidence": {},
                "remediation": "Replace the node",
            }
        ],
        "smoke": [],
    }

"""With Redis away a request costs at most ~0.2 s more (issue 29, item 9): the broker and the
cache are tried once with short timeouts, then skipped by a circuit breaker. The costs themselves
are measured by bench/redis_away.py (docs/benchmarks.md), not asserted here; these tests pin the
settings production runs with and that the breaker keeps later calls away from a dead server."""

import pytest
from celery import current_app
from django.conf import settings

from config.settings import SCALED_TIMINGS
from labgpu.core import outbox
from labgpu.core.breaker import CircuitBreaker
from labgpu.core.models import OutboxMessage
from labgpu.core.testing import RedisServer
from labgpu.ops import cache as cache_module
from labgpu.ops.cache import ResilientRedisCache


@pytest.fixture
def dead_broker():
    """The app's broker is a loopback port nobody listens on."""
    port = RedisServer().port  # a free port, no server started
    saved = current_app.conf.broker_url
    current_app.conf.broker_url = f"redis://127.0.0.1:{port}/1"
    outbox.reset_broker_connections()
    yield
    outbox.reset_broker_connections()
    current_app.conf.broker_url = saved
    outbox.reset_broker_connections()


@pytest.fixture
def sends(monkeypatch):
    """Every publish that reaches kombu (the breaker let it through)."""
    calls = []
    original = current_app.send_task

    def spy(*args, **kwargs):
        calls.append(kwargs.get("connection"))
        return original(*args, **kwargs)

    monkeypatch.setattr(current_app, "send_task", spy)
    return calls


def test_production_publishes_once_with_short_timeouts():
    assert outbox.PUBLISH_CONNECT_TIMEOUT_S == 0.05 and outbox.PUBLISH_SOCKET_TIMEOUT_S == 0.1
    connection = outbox._publisher._connect()
    assert connection.connect_timeout == outbox.PUBLISH_CONNECT_TIMEOUT_S
    options = connection.transport_options
    assert options["max_retries"] == 0 and options["retry_on_timeout"] is False
    assert options["socket_connect_timeout"] == outbox.PUBLISH_CONNECT_TIMEOUT_S
    assert options["socket_timeout"] == outbox.PUBLISH_SOCKET_TIMEOUT_S
    # the broker's own options (the visibility timeout that redelivers a dead worker's task) stay
    assert (
        options["visibility_timeout"]
        == current_app.conf.broker_transport_options["visibility_timeout"]
    )
    assert SCALED_TIMINGS["LABGPU_REDIS_BREAKER_S"] == 5.0  # production seconds
    assert outbox.broker_breaker().open_for_s == settings.LABGPU_REDIS_BREAKER_S


@pytest.mark.django_db(transaction=True)
def test_a_dead_broker_is_tried_once_then_skipped_and_the_outbox_keeps_the_work(dead_broker, sends):
    assert outbox.publish_best_effort("labgpu.core.tasks.relay_outbox") is False
    assert len(sends) == 1
    outbox.enqueue_on_commit("labgpu.provisioning.tasks.start_booking", 41)  # autocommit: now
    outbox.enqueue_on_commit("labgpu.provisioning.tasks.start_booking", 42)
    assert len(sends) == 1  # the breaker is open: no request waits on the dead broker again
    rows = list(OutboxMessage.objects.order_by("pk").values_list("task", "args"))
    assert rows == [
        ("labgpu.provisioning.tasks.start_booking", [41]),
        ("labgpu.provisioning.tasks.start_booking", [42]),
    ]
    assert outbox.outbox_relay() == 0  # still away: the rows stay for the next run


def test_production_cache_timeouts_and_a_dead_cache_is_skipped(settings):
    assert (cache_module.CONNECT_TIMEOUT_S, cache_module.SOCKET_TIMEOUT_S) == (0.05, 0.1)
    port = RedisServer().port
    away = ResilientRedisCache(f"redis://127.0.0.1:{port}/0", {})
    assert away._options["socket_connect_timeout"] == cache_module.CONNECT_TIMEOUT_S
    assert away._options["socket_timeout"] == cache_module.SOCKET_TIMEOUT_S
    tried = []
    original = away._cache.get_client

    def spy(*args, **kwargs):
        tried.append(1)
        return original(*args, **kwargs)

    away._cache.get_client = spy
    assert away.get("k", "default") == "default"
    assert len(tried) == 1
    assert away.get("k") is None and away.sliding_window("w", now=1.0, duration=60, limit=5) is None
    assert away.set("k", 1) is None
    assert len(tried) == 1  # the breaker is open: later calls do not touch the dead server


def test_the_breaker_lets_one_probe_through_after_its_open_period(monkeypatch):
    moment = [100.0]
    monkeypatch.setattr("labgpu.core.breaker.time.monotonic", lambda: moment[0])
    breaker = CircuitBreaker("test", open_for_s=5)
    assert breaker.allows()
    breaker.failed()
    assert not breaker.allows()
    moment[0] += 5
    assert breaker.allows()  # the probe
    assert not breaker.allows()  # the others keep skipping while it runs
    breaker.failed()
    moment[0] += 4.9
    assert not breaker.allows()
    moment[0] += 0.1
    assert breaker.allows()
    breaker.succeeded()
    assert breaker.allows() and breaker.allows()

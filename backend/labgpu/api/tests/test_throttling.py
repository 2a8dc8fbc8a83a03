"""The per-token/per-user rate limit (labgpu.api.throttling.PrincipalRateThrottle): DRF's sliding
window, kept in Redis in one atomic round trip, or by DRF's read-and-write on another cache.

The Redis tests run on a throwaway Redis of their own (the `shared_redis` fixture), as production's
cache is configured, whether or not this machine sets REDIS_URL."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.cache import caches
from django.test import override_settings

from labgpu.api.throttling import PrincipalRateThrottle
from labgpu.ops.cache import ResilientRedisCache


@pytest.fixture
def throttle(monkeypatch, settings, shared_redis):
    settings.CACHES = {
        "default": {"BACKEND": "labgpu.ops.cache.ResilientRedisCache", "LOCATION": shared_redis.url}
    }
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "3/min", raising=False)
    moment = [1_000_000.0]
    throttle = PrincipalRateThrottle()
    throttle.timer = lambda: moment[0]
    caches["default"].clear()
    yield throttle, moment
    caches["default"].clear()


def test_redis_window_lets_the_limit_in_then_refuses_until_the_oldest_leaves(throttle):
    throttle, moment = throttle
    assert isinstance(caches["default"], ResilientRedisCache)
    for step in range(3):
        moment[0] = 1_000_000.0 + 10 * step
        assert throttle.allow_key("throttle_test_a")
    moment[0] = 1_000_030.0
    assert not throttle.allow_key("throttle_test_a")
    # DRF's wait(): the oldest (t=0) leaves at t=60, spread over the requests it then allows.
    assert throttle.wait() == pytest.approx(30.0)
    assert throttle.allow_key("throttle_test_b")  # another token has its own window
    moment[0] = 1_000_060.0  # the first request has left the window
    assert throttle.allow_key("throttle_test_a")
    assert not throttle.allow_key("throttle_test_a")


def test_redis_window_is_one_round_trip_without_cache_reads_or_writes(throttle, monkeypatch):
    throttle, _ = throttle
    cache = caches["default"]
    calls = []
    for name in ("get", "set"):
        monkeypatch.setattr(cache, name, lambda *a, _name=name, **kw: calls.append(_name))
    assert throttle.allow_key("throttle_test_c")
    assert calls == []


def test_parallel_requests_never_pass_the_limit(throttle):
    """Read-then-write lets parallel requests all read the same history; the script cannot."""
    throttle, _ = throttle

    def one(_):
        own = PrincipalRateThrottle()
        own.timer = throttle.timer
        return own.allow_key("throttle_test_d")

    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(one, range(32)))
    assert answers.count(True) == 3


def test_without_redis_the_request_is_let_in(throttle):
    throttle, _ = throttle
    away = ResilientRedisCache(
        "redis://127.0.0.1:9/0", {"OPTIONS": {"socket_connect_timeout": 0.2}}
    )
    assert away.sliding_window("k", now=1.0, duration=60, limit=0) is None
    with override_settings(
        CACHES={
            "default": {
                "BACKEND": "labgpu.ops.cache.ResilientRedisCache",
                "LOCATION": "redis://127.0.0.1:9/0",
            }
        }
    ):
        assert throttle.allow_key("throttle_test_e")


@override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}})
def test_other_caches_keep_drfs_window(monkeypatch):
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "2/min", raising=False)
    monkeypatch.setattr(PrincipalRateThrottle, "cache", caches["default"])
    throttle = PrincipalRateThrottle()
    throttle.timer = lambda: 5_000.0
    assert throttle.allow_key("throttle_test_f")
    assert throttle.allow_key("throttle_test_f")
    assert not throttle.allow_key("throttle_test_f")
    assert throttle.wait() == pytest.approx(60.0)

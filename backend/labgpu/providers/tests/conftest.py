from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from emulator.pytest_fixtures import emulator, emulator_server  # noqa: F401
from emulator.testing import EmulatorHandle
from labgpu.providers.digitalocean import DigitalOceanDriver

REDIS_TEST_URL = "redis://127.0.0.1:6379/15"


@pytest.fixture
def make_driver(
    emulator: EmulatorHandle,  # noqa: F811
) -> Iterator[Callable[..., DigitalOceanDriver]]:
    """Drivers pointed at the live emulator, with test-fast backoff; closed after the test."""
    made: list[DigitalOceanDriver] = []

    def make(**options: Any) -> DigitalOceanDriver:
        options = {
            "base_url": emulator.url,
            "token": "test-token",
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
            "timeout_s": 2.0,
            **options,
        }
        driver = DigitalOceanDriver(**options)
        made.append(driver)
        return driver

    yield make
    for driver in made:
        driver.close()


@pytest.fixture
def redis_client() -> Iterator[Any]:
    """Redis db 15 on localhost, skipped when absent; keys under a per-test prefix are removed."""
    redis = pytest.importorskip("redis")
    client = redis.Redis.from_url(REDIS_TEST_URL, socket_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis not reachable at {REDIS_TEST_URL}: {exc}")
    yield client
    client.close()


@pytest.fixture
def budget_prefix(redis_client: Any) -> Iterator[str]:
    prefix = f"labgpu-test:{uuid.uuid4().hex[:8]}"
    yield prefix
    for key in redis_client.scan_iter(f"{prefix}:*"):
        redis_client.delete(key)

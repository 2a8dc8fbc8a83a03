from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from emulator.contract import ExchangeRecorder, validation_on
from emulator.pytest_fixtures import emulator, emulator_server  # noqa: F401
from emulator.testing import EmulatorHandle
from labgpu.providers.digitalocean import DigitalOceanDriver


@pytest.fixture
def make_driver(
    request: pytest.FixtureRequest,
    emulator: EmulatorHandle,  # noqa: F811
) -> Iterator[Callable[..., DigitalOceanDriver]]:
    """Drivers pointed at the live emulator, with test-fast backoff; closed after the test.

    Every exchange of every driver is recorded and validated against DigitalOcean's contract after
    the test: no driver test can send or accept what the spec forbids. Without the spec (no
    ../shared, no $LABGPU_DO_OPENAPI) the behaviour test still runs — retries, 429s, ambiguous
    creates need no spec — unvalidated, and the run ends with one red line that says how many did;
    the contract tests themselves (test_contract.py) skip.
    """
    validate = validation_on(request.node)
    made: list[DigitalOceanDriver] = []
    recorder = ExchangeRecorder()

    def make(**options: Any) -> DigitalOceanDriver:
        hooks = {k: list(v) for k, v in (options.pop("event_hooks", None) or {}).items()}
        for name, funcs in recorder.hooks.items():
            hooks.setdefault(name, []).extend(funcs)
        options["event_hooks"] = hooks
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
    if validate:
        recorder.assert_valid()


@pytest.fixture
def redis_client(shared_redis: Any) -> Iterator[Any]:
    """A client of the run's throwaway Redis (never the developer's); keys under a per-test
    prefix are removed."""
    import redis

    client = redis.Redis.from_url(shared_redis.url, socket_timeout=2)
    yield client
    client.close()


@pytest.fixture
def budget_prefix(redis_client: Any) -> Iterator[str]:
    prefix = f"labgpu-test:{uuid.uuid4().hex[:8]}"
    yield prefix
    for key in redis_client.scan_iter(f"{prefix}:*"):
        redis_client.delete(key)


@pytest.fixture
def account_key(emulator: EmulatorHandle, tmp_path: Any) -> dict[str, Any]:  # noqa: F811
    """A fresh ed25519 key registered on the emulated account ({id, fingerprint, …}): droplet
    creates accept only keys the account knows, as DigitalOcean's do."""
    path = tmp_path / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "lab@example.org", "-f", str(path)],
        check=True,
    )
    return emulator.add_ssh_key((tmp_path / "id_ed25519.pub").read_text().strip(), name="lab")

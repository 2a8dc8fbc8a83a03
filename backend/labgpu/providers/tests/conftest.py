from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from emulator.contract import ExchangeRecorder, require_contract
from emulator.pytest_fixtures import emulator, emulator_server  # noqa: F401
from emulator.testing import EmulatorHandle
from labgpu.providers.digitalocean import DigitalOceanDriver

REDIS_TEST_URL = "redis://127.0.0.1:6379/15"


@pytest.fixture
def make_driver(
    emulator: EmulatorHandle,  # noqa: F811
) -> Iterator[Callable[..., DigitalOceanDriver]]:
    """Drivers pointed at the live emulator, with test-fast backoff; closed after the test.

    Every exchange of every driver is recorded and validated against DigitalOcean's contract after
    the test: no driver test can send or accept what the spec forbids. Without the spec the test
    is skipped with the reason (`emulator.contract.require_contract`), never run unvalidated.
    """
    require_contract()
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
    recorder.assert_valid()


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


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say it at the end, in red: a run without the spec checked no DigitalOcean contract."""
    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if "contract is NOT validated" in str(getattr(report, "longrepr", ""))
    ]
    if skipped:
        terminalreporter.write_sep(
            "!",
            f"{len(skipped)} provider test(s) SKIPPED: DigitalOcean's OpenAPI description is "
            "missing, so no driver exchange was validated (see LABGPU_DO_OPENAPI)",
            red=True,
            bold=True,
        )

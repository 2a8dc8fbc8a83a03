"""Pytest fixtures for tests that need a live emulator. Import them into a conftest:

    from emulator.pytest_fixtures import emulator, emulator_server  # noqa: F401

`emulator_server` is one emulator subprocess per test session; `emulator` hands it to a test
freshly reset (no droplets, faults, counters or rate-limit history) with the session's settings.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .testing import EmulatorHandle, start_emulator

#: Settings that tests may change through `emulator.configure(...)`; restored before each test.
_RESTORED = (
    "boot_delay_s",
    "ip_delay_s",
    "volume_action_s",
    "shutdown_s",
    "rate_limit",
    "rate_window_s",
    "rate_limit_hourly",
    "rate_window_hourly_s",
    "max_per_page",
    "agent_cmd",
)


@pytest.fixture(scope="session")
def emulator_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorHandle]:
    """No node agents by default, so driver tests stay hermetic; a test that wants them calls
    `emulator.configure(agent_cmd="labgpu-agent")` (restored afterwards)."""
    handle = start_emulator(tmp_path_factory.mktemp("emulator"), agent_cmd="")
    try:
        yield handle
    finally:
        handle.close()


@pytest.fixture
def emulator(emulator_server: EmulatorHandle) -> Iterator[EmulatorHandle]:
    initial: dict[str, Any] = getattr(emulator_server, "_initial_settings", None) or {}
    if not initial:
        current = emulator_server.configure()
        initial = {k: current[k] for k in _RESTORED}
        emulator_server._initial_settings = initial  # type: ignore[attr-defined]
    if emulator_server.process is None or emulator_server.process.poll() is not None:
        emulator_server.start()  # a test may have stopped or killed it
    emulator_server.configure(**initial, tokens=[])  # the session emulator accepts any token
    emulator_server.reset()
    yield emulator_server

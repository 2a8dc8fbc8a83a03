"""Start the emulator as a real subprocess for tests (and benchmarks), and drive its admin API.

    handle = start_emulator(tmp_path, boot_delay_s=0.2)
    try:
        handle.set_faults(no_capacity_sizes=["gpu-mi300x1-192gb"])
        ...
    finally:
        handle.stop()

Pytest fixtures built on it live in `emulator.pytest_fixtures`; import them into a conftest.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

BACKEND_DIR = Path(__file__).resolve().parent.parent

#: Settings that become command-line flags of `python -m emulator`.
_FLAGS = {
    "boot_delay_s": "--boot-delay",
    "ip_delay_s": "--ip-delay",
    "volume_action_s": "--volume-action-delay",
    "shutdown_s": "--shutdown-delay",
    "rate_limit": "--rate-limit",
    "rate_window_s": "--rate-window",
    "rate_limit_hourly": "--rate-limit-hourly",
    "rate_window_hourly_s": "--rate-window-hourly",
    "max_per_page": "--max-per-page",
    "agent_cmd": "--agent-cmd",
    "ip_mode": "--ip-mode",
    "public_url": "--public-url",
    "tick_s": "--tick",
    "log_level": "--log-level",
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class EmulatorHandle:
    url: str
    port: int
    state_file: Path
    log_file: Path
    argv: list[str]
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    _admin: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self._admin = httpx.Client(base_url=self.url, timeout=10)

    # -- admin API ------------------------------------------------------------------------------

    def _call(self, method: str, path: str, json: Any = None) -> Any:
        response = self._admin.request(method, path, json=json)
        response.raise_for_status()
        return response.json()

    def state(self) -> dict[str, Any]:
        return self._call("GET", "/_emulator/state")

    def droplets(self) -> list[dict[str, Any]]:
        return self.state()["droplets"]

    def ledger(self) -> list[dict[str, Any]]:
        """Every droplet ever created: id, name, tags, created_at, gone_at (epoch seconds)."""
        return self.state()["ledger"]

    def set_faults(self, **faults: Any) -> dict[str, Any]:
        """Replace the named faults (see `emulator.state.Faults`)."""
        return self._call("POST", "/_emulator/faults", faults)

    def clear_faults(self) -> dict[str, Any]:
        return self._call("DELETE", "/_emulator/faults")

    def fail_next(self, method: str, path: str, status: int, **rule: Any) -> dict[str, Any]:
        """Queue one injected failure, e.g. `fail_next("POST", "/v2/droplets", 500,
        after_create=True)`; a rule can also take `times`, `delay_s` and `message`."""
        queue = self.state()["faults"]["next"]
        queue.append({"method": method, "path": path, "status": status, **rule})
        return self.set_faults(next=queue)

    def volumes(self) -> list[dict[str, Any]]:
        """The volumes as the API shows them (id, name, region, size_gigabytes, droplet_ids…)."""
        return self.state()["volumes"]

    def volume_ledger(self) -> list[dict[str, Any]]:
        """Every volume ever created: sizes over time, created_at, deleted_at (epoch seconds)."""
        return self.state()["volume_ledger"]

    def seed_volume(self, name: str, region: str, size_gigabytes: int = 10, **extra: Any) -> Any:
        """A volume made outside LabGPU (no API request spent); returns it as the API shows it."""
        body = {"name": name, "region": region, "size_gigabytes": size_gigabytes, **extra}
        return self._call("POST", "/_emulator/volumes", body)["volume"]

    def set_stock(self, size: str, region: str, free: int | None) -> dict[str, Any]:
        """Machines of `size` still free in `region` (0: out of stock; None: unlimited)."""
        return self.set_faults(stock={size: {region: free}})

    def add_ssh_key(self, public_key: str, name: str = "test key") -> dict[str, Any]:
        """Register a key on the emulated account (as `POST /v2/account/keys` would, but without
        spending the rate limit); returns it with its `id` and `fingerprint`."""
        return self._call("POST", "/_emulator/ssh_keys", {"name": name, "public_key": public_key})[
            "ssh_key"
        ]

    def configure(self, **settings: Any) -> dict[str, Any]:
        """Change runtime settings (boot_delay_s, rate_limit, max_per_page, agent_cmd, …)."""
        return self._call("POST", "/_emulator/settings", settings)

    def set_prices(self, **prices: dict[str, float]) -> dict[str, Any]:
        """Change the price list `GET /v2/sizes` serves: set_prices(**{"gpu-h100x1-80gb": {…}})."""
        return self._call("POST", "/_emulator/prices", prices)

    def reset(self) -> None:
        """Forget all droplets, faults, counters and rate-limit windows."""
        self._call("POST", "/_emulator/reset")

    def seed(self, count: int, **options: Any) -> list[int]:
        """Create droplets directly (size, region, tags, name_prefix, status="active"|"new")."""
        return self._call("POST", "/_emulator/droplets", {"count": count, **options})["ids"]

    def vanish(self, droplet_id: int) -> None:
        """Make a droplet disappear as if someone deleted it outside LabGPU."""
        self._call("POST", f"/_emulator/droplets/{droplet_id}/vanish")

    def activate(self, droplet_id: int) -> None:
        """Finish a droplet's boot now."""
        self._call("POST", f"/_emulator/droplets/{droplet_id}/activate")

    def wait_for(self, predicate: Any, *, timeout_s: float = 10, interval_s: float = 0.05) -> Any:
        """Poll the admin state until `predicate(state)` is truthy; return its value."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = predicate(self.state())
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"emulator state did not satisfy {predicate!r} in {timeout_s}s")
            time.sleep(interval_s)

    # -- process --------------------------------------------------------------------------------

    def start(self, *, timeout_s: float = 15) -> EmulatorHandle:
        if self.process is not None and self.process.poll() is None:
            return self
        log = open(self.log_file, "ab")  # noqa: SIM115 - the child owns it from here
        try:
            self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                self.argv,
                cwd=BACKEND_DIR,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"emulator exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            with contextlib.suppress(httpx.TransportError):
                if self._admin.get("/_emulator/health", timeout=1).status_code == 200:
                    return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"emulator did not start within {timeout_s}s:\n{self.log_tail()}")

    def stop(self, *, timeout_s: float = 10) -> None:
        """Stop gracefully (the emulator stops its agents and saves its state)."""
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            # its own session (start_new_session): this kills the emulator and its agents only
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)

    def kill(self) -> None:
        """SIGKILL, no cleanup: for restart-survival tests."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)

    def restart(self) -> EmulatorHandle:
        self.stop()
        return self.start()

    def close(self) -> None:
        self.stop()
        self._admin.close()

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def start_emulator(
    tmp_path: Path,
    *,
    port: int | None = None,
    env: dict[str, str] | None = None,
    tokens: list[str] | tuple[str, ...] = (),
    stock: dict[str, dict[str, int]] | None = None,
    idle_after: dict[str, int] | None = None,
    **settings: Any,
) -> EmulatorHandle:
    """Start `python -m emulator` on a free 127.0.0.1 port with state under `tmp_path`.

    `settings` are `EmulatorSettings` fields (boot_delay_s=0.2, rate_limit=…, agent_cmd=…);
    `stock` is the start-up stock {size: {region: free}}; `idle_after` the start-up idle tags
    {tag: heartbeats}. The defaults here are test-fast and
    passed explicitly: a 0.2 s boot (the emulator's own default is realistic minutes, and it logs
    that it runs shortened), IPs at once, 50 ms ticks.
    """
    unknown = set(settings) - set(_FLAGS)
    if unknown:
        raise TypeError(f"unknown emulator setting(s): {sorted(unknown)}")
    settings = {
        "boot_delay_s": 0.2,
        "ip_delay_s": 0.0,
        "volume_action_s": 0.2,
        "shutdown_s": 0.2,
        "tick_s": 0.05,
        **settings,
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    argv = [
        sys.executable,
        "-m",
        "emulator",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--state-file",
        str(tmp_path / "emulator-state.json"),
    ]
    for key, value in settings.items():
        if value is not None:
            argv += [_FLAGS[key], str(value)]
    for token in tokens:
        argv += ["--token", token]
    for size, regions in (stock or {}).items():
        for region, free in regions.items():
            argv += ["--stock", f"{size}@{region}={free}"]
    for tag, beats in (idle_after or {}).items():
        argv += ["--idle-after", f"{tag}={beats}"]
    child_env = {**os.environ, **(env or {})}
    child_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(BACKEND_DIR), child_env.get("PYTHONPATH", "")) if p
    )
    handle = EmulatorHandle(
        url=f"http://127.0.0.1:{port}",
        port=port,
        state_file=tmp_path / "emulator-state.json",
        log_file=tmp_path / "emulator.log",
        argv=argv,
        env=child_env,
    )
    return handle.start()

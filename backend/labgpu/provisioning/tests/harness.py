"""Real parts for lifecycle tests: a Redis broker of our own, Celery workers as subprocesses,
the DigitalOcean emulator over HTTP, and agents in fixture mode reporting to a live server."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labgpu.core.testing import RedisServer, database_url  # noqa: F401  (lifecycle tests, bench)

BACKEND_DIR = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent
# The workers run every production timing times this (LABGPU_TIME_SCALE); a test's bound on
# a promise made in production seconds is the promise times the same factor (`scaled_bound`).
TIME_SCALE = 0.1


def scaled_bound(production_s: float, scale: float = TIME_SCALE) -> float:
    """A promise in production seconds, at the workers' time scale."""
    return production_s * scale


def scale_lifecycle_timings(settings: Any, scale: float = TIME_SCALE) -> None:
    """Give this process (the live API) the workers' timings: every scaled one, same factor."""
    from config import settings as configured

    settings.TIME_SCALE = scale
    for name, production_s in configured.SCALED_TIMINGS.items():
        if hasattr(settings, name):
            setattr(settings, name, production_s * scale)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(
    predicate: Callable[[], Any],
    *,
    timeout_s: float = 60,
    interval_s: float = 0.2,
    message: str = "condition",
) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {message}")


def test_database_env() -> dict[str, str]:
    """Point a subprocess at the test database this test process is using."""
    return {"DATABASE_URL": database_url()}


@dataclass
class Worker:
    env: dict[str, str]
    log_path: Path
    beat: bool = True
    process: subprocess.Popen | None = None
    killed: bool = False

    def start(self) -> Worker:
        self.log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.command(),
            cwd=BACKEND_DIR,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            # Its own process group: `--beat` forks a beat process that must die with the worker.
            start_new_session=True,
        )
        return self

    def command(self) -> list[str]:
        return [
            str(VENV_BIN / "celery"),
            "-A",
            "config",
            "worker",
            "--loglevel",
            "INFO",
            "--pool",
            "threads",
            "--concurrency",
            "4",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-n",
            f"test-{time.monotonic_ns()}@%h",
            *(["--beat", "--schedule", self.schedule_file()] if self.beat else []),
        ]

    def kill(self) -> None:
        """SIGKILL to the worker and its beat: no cleanup, no acknowledgement — what a crashed
        machine looks like."""
        self.killed = True
        self._kill_group()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=15)
        self._kill_group()  # whatever is left, e.g. a beat whose worker was killed
        self.log.close()

    def _kill_group(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if self.process.poll() is None:
            self.process.wait(timeout=10)

    def wait_ready(self, timeout_s: float = 60) -> float:
        """When the worker said it is ready to take tasks (epoch seconds, as the emulator's)."""
        wait_for(
            lambda: " ready." in self.log_path.read_text(errors="replace"),
            timeout_s=timeout_s,
            interval_s=0.05,
            message=f"worker {self.log_path.name} to be ready",
        )
        return time.time()

    def schedule_file(self) -> str:
        """A schedule file of this start's own: a restarted worker must not open the file its
        predecessor's beat (still dying in its process group) holds — on Python 3.13 shelve is
        SQLite, which refuses it ("locking protocol") and the new beat never runs."""
        return str(self.log_path.with_suffix(f".{time.monotonic_ns()}.beat"))

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


class Beat(Worker):
    """A `celery beat` process of its own (the schedule apart from the workers)."""

    def command(self) -> list[str]:
        schedule = self.schedule_file()
        return [str(VENV_BIN / "celery"), "-A", "config", "beat", "--loglevel", "INFO",
                "--schedule", schedule]  # fmt: skip

    @property
    def leading(self) -> bool:
        return "beat: leading the schedule" in self.log_path.read_text(errors="replace")


def worker_env(*, broker_url: str, api_url: str, mail_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        **test_database_env(),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "CELERY_BROKER_URL": broker_url,
        "REDIS_URL": broker_url,
        "LABGPU_PROVIDER_REDIS_URL": broker_url,
        "LABGPU_PUBLIC_API_URL": api_url,
        # Production timings, every one scaled by the same factor (config/settings.py `scaled`).
        "LABGPU_TIME_SCALE": str(TIME_SCALE),
        "DJANGO_EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
        "LABGPU_EMAIL_FILE_PATH": str(mail_dir),
        "PYTHONPATH": str(BACKEND_DIR),
    }
    env.update(extra)
    return env

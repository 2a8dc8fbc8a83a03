"""A real gunicorn with production settings, serving the test database (`make security`).

Started the way backend/Procfile starts it (its `web:` line, so gunicorn.conf.py, the access log on
stdout and the worker model are the ones `make run` uses), with LABGPU_PRODUCTION=1 and DEBUG off,
on the test database and a throwaway Redis of its own (production always has Redis; so does this
server, whether or not the machine sets REDIS_URL). Tests that talk to it write their data with
`django_db(transaction=True)`, so gunicorn's workers see it.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from labgpu.core.testing import RedisServer, database_url

BACKEND = Path(__file__).resolve().parents[3]
HOST = "127.0.0.1"


@dataclass
class LiveGunicorn:
    url: str
    log_path: Path
    metrics_token: str
    env: dict[str, str] = field(repr=False)
    redis: RedisServer | None = field(default=None, repr=False)

    def clear_cache(self) -> None:
        """Empty the server's cache (throttle counters included), shared by its workers."""
        if self.redis is not None:
            self.redis.flush()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def client(self, **kwargs) -> httpx.Client:  # type: ignore[no-untyped-def]
        return httpx.Client(base_url=self.url, timeout=30, **kwargs)


def procfile_web_command(port: int) -> list[str]:
    line = next(
        line.split(":", 1)[1]
        for line in (BACKEND / "Procfile").read_text().splitlines()
        if line.startswith("web:")
    )
    line = line.replace("$VENV_BIN", str(Path(sys.executable).parent)).replace("$PORT", str(port))
    return shlex.split(line)


def database_env() -> dict[str, str]:
    """The test database pytest-django created, as the settings read it from the environment."""
    return {"DATABASE_URL": database_url()}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def production_server_env(var_dir: Path, metrics_token: str, redis_url: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "LABGPU_", "PYTEST_", "DATABASE_URL"))
    }
    env.update(database_env())
    env.update(
        LABGPU_PRODUCTION="1",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS=f"{HOST},localhost",
        DJANGO_CSRF_TRUSTED_ORIGINS=f"http://{HOST}",
        # Plain HTTP on loopback: no TLS proxy in front, so no redirect to https.
        DJANGO_SECURE_SSL_REDIRECT="0",
        DJANGO_EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
        LABGPU_VAR_DIR=str(var_dir),
        LABGPU_METRICS_TOKEN=metrics_token,
        # Schemathesis sends thousands of requests as one user; the login limits stay as shipped.
        LABGPU_THROTTLE_USER="1000000/min",
        LABGPU_THROTTLE_ANON="1000000/min",
        PYTHONUNBUFFERED="1",
        REDIS_URL=redis_url,
    )
    return env


@pytest.fixture(scope="session")
def live_gunicorn(django_db_setup):
    """Yields a LiveGunicorn; stops it before pytest-django drops the test database."""
    port = free_port()
    var_dir = Path(tempfile.mkdtemp(prefix="labgpu-gunicorn-"))
    log_path = var_dir / "gunicorn.log"
    metrics_token = secrets.token_urlsafe(24)
    redis = RedisServer().start()
    env = production_server_env(var_dir, metrics_token, redis.url)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            procfile_web_command(port),
            cwd=BACKEND,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = LiveGunicorn(f"http://{HOST}:{port}", log_path, metrics_token, env, redis)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"gunicorn exited with {process.returncode}:\n{server.log()}")
            try:
                if httpx.get(f"{server.url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"gunicorn did not answer /healthz within 60 s:\n{server.log()}")
            time.sleep(0.2)
        yield server
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        redis.stop()
    report_server_errors(server)


# An access log line: `127.0.0.1 - - [30/Nov/2026:07:50:01 +0000] "GET /x HTTP/1.1" 404 …`.
ACCESS_LINE = re.compile(r'^\S+ \S+ \S+ \[[^\]]+\] "[^"]*" (\d{3}) ')


def report_server_errors(server: LiveGunicorn) -> None:
    """Whatever the tests asserted, a 5xx anywhere in the server's access log fails the run;
    the count goes to $LABGPU_SECURITY_REPORT for `make security` to print."""
    statuses = [int(m.group(1)) for m in map(ACCESS_LINE.match, server.log().splitlines()) if m]
    errors = [s for s in statuses if s >= 500]
    summary = f"live gunicorn answered {len(statuses)} requests, {len(errors)} with a 5xx"
    if os.environ.get("LABGPU_SECURITY_REPORT"):
        # Appended: under pytest-xdist each worker has its own server and adds its own line.
        with Path(os.environ["LABGPU_SECURITY_REPORT"]).open("a") as report:
            report.write(summary + "\n")
    if errors:
        pytest.fail(f"{summary}; the log is {server.log_path}")

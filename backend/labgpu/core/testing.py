"""Helpers for tests that start subprocesses (gunicorn, Celery workers, the benches)."""

from __future__ import annotations

from urllib.parse import quote

from django.db import connection


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

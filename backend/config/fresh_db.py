"""A fresh, empty database beside another one, for a run that must not touch its data.

    python backend/config/fresh_db.py URL SUFFIX   # drops and creates <URL's name>_<SUFFIX>

Prints the new database's URL. labgpu_alice with suffix e2e is labgpu_alice_e2e: each checkout and
each tool (the browser suite, the SPA benches) its own, so two never drop each other's run.
Run by path (no Django): frontend/scripts/run-e2e.sh and bench/lib/spa_server.sh use it.
"""

from __future__ import annotations

import sys
from urllib.parse import urlsplit

import psycopg
from psycopg import sql


def fresh_database(url: str, suffix: str) -> str:
    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'labgpu'}_{suffix}"
    with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return parts._replace(path=f"/{name}").geturl()


if __name__ == "__main__":
    print(fresh_database(sys.argv[1], sys.argv[2]))

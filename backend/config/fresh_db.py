"""A fresh, empty database beside another one, for a run that must not touch its data.

    python backend/config/fresh_db.py URL SUFFIX   # drops and creates <URL's name>_<SUFFIX>
    python backend/config/fresh_db.py URL SUFFIX --copy-of OTHER   # … as a copy of <name>_<OTHER>
    python backend/config/fresh_db.py URL SUFFIX --url-only        # only prints its URL

Prints the new database's URL. labgpu_alice with suffix e2e is labgpu_alice_e2e: each checkout and
each tool (the browser suite, the SPA benches) its own, so two never drop each other's run.
Run by path (no Django): frontend/scripts/run-e2e.sh and bench/lib/spa_server.sh use it.
"""

from __future__ import annotations

import argparse
from urllib.parse import urlsplit

import psycopg
from psycopg import sql


def sibling_url(url: str, suffix: str) -> str:
    parts = urlsplit(url)
    return parts._replace(path=f"/{_sibling_name(url, suffix)}").geturl()


def _sibling_name(url: str, suffix: str) -> str:
    return f"{urlsplit(url).path.lstrip('/') or 'labgpu'}_{suffix}"


def fresh_database(url: str, suffix: str, copy_of: str | None = None) -> str:
    """Drop and create <name>_<suffix>; with copy_of, as a copy of <name>_<copy_of> (which nobody
    may be connected to: PostgreSQL copies a template only while it is idle)."""
    name = _sibling_name(url, suffix)
    create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if copy_of:
        template = sql.Identifier(_sibling_name(url, copy_of))
        create = sql.SQL("{} TEMPLATE {}").format(create, template)
    maintenance = urlsplit(url)._replace(path="/postgres").geturl()
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(create)
    return sibling_url(url, suffix)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("suffix")
    parser.add_argument("--copy-of", metavar="OTHER_SUFFIX")
    parser.add_argument("--url-only", action="store_true")
    args = parser.parse_args()
    if args.url_only:
        print(sibling_url(args.url, args.suffix))
    else:
        print(fresh_database(args.url, args.suffix, args.copy_of))

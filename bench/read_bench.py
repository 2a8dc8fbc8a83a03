#!/usr/bin/env python3
"""Read benchmark: what the calendar asks for one pool-month, over HTTP against gunicorn.

    .venv/bin/python bench/read_bench.py --bookings 10000
    .venv/bin/python bench/read_bench.py --bookings 100000 --ref 87bfac5

What it does (everything on loopback):
  1. drops and creates the database `labgpu_read_bench`, migrates it, and makes labs, users with
     `book` tokens and pools as the booking storm does (bench/storm_seed.py);
  2. writes --bookings bookings with COPY (bench/bulk_bookings.py): every slot of every pool is
     booked about once a day (--per-slot-day), --future-days ahead and as far back as the rest
     needs, so the month the calendar shows holds the same bookings at 10,000 rows as at 100,000
     and only the history grows;
  3. starts gunicorn as `make run` does (sync, 3 workers, DEBUG off, Redis cache when up);
  4. one client on one keep-alive connection asks, in turn, --requests times each:
       GET /api/v1/pools/{id}/busy/?start=…&end=…            (next calendar month, UTC)
       GET /api/v1/bookings/?pool=…&start_after=…&end_before=… (first page of 50)
       GET /api/v1/bookings/?pool=…&start_after=…&end_before=…&page_size=500 (the whole month)
       GET /api/v1/bookings/compact/?pool=…&start_after=…&end_before=… (the whole month, compact)
       GET /api/v1/pools/{id}/availability/?start=…&end=…
     as a member of one lab (other labs' bookings are anonymous busy blocks), after a warm-up;
     the whole month's two lists also as a site admin (`*_admin`: every lab's bookings of the
     pool-month, ~220 of them, as the peer's one-resource month of 155 is all of its bookings);
  5. prints p50/p95/p99 per endpoint, the rows and bytes each answer held, and the machine's load
     (the targets of issue 27 item 3 at 100,000 rows: compact ≤ 10 ms, busy and availability
     ≤ 5 ms p50); and GET /api/v1/me/, the read every SPA page starts with.

With --ref REF the same run also goes against a git worktree of REF (its own database,
`labgpu_read_bench_ref`) right after, and both are printed side by side.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import booking_storm as storm
from bulk_bookings import seed_bookings
from labgpu.core.testing import RedisServer

TARGET_MS = {10_000: 10.0, 100_000: 15.0}
ENDPOINTS = (
    "busy",
    "list",
    "list_month",
    "compact",
    "list_month_admin",
    "compact_admin",
    "availability",
    "me",
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--bookings", type=int, default=10_000, help="rows in bookings_booking"
    )
    p.add_argument("--pools", type=int, default=8)
    p.add_argument("--capacity", type=int, default=8, help="nodes (slots) per pool")
    p.add_argument(
        "--per-slot-day", type=float, default=1.0, help="bookings per slot per day"
    )
    p.add_argument("--future-days", type=float, default=75)
    p.add_argument(
        "--requests", type=int, default=300, help="measured requests per endpoint"
    )
    p.add_argument(
        "--warmup", type=int, default=30, help="unmeasured requests per endpoint"
    )
    p.add_argument("--workers", type=int, default=3)
    p.add_argument(
        "--ref", help="also run against this git ref (a worktree), side by side"
    )
    p.add_argument("--db", default="labgpu_read_bench")
    p.add_argument("--keep-db", action="store_true")
    p.add_argument("--json", action="store_true", help="print only the JSON")
    p.add_argument(
        "--pg-url",
        default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432"),
    )
    args = p.parse_args(argv)
    if not 1_000 <= args.bookings <= 1_000_000 or not 1 <= args.requests <= 10_000:
        p.error("--bookings 1000..1000000, --requests 1..10000")
    # What booking_storm's helpers read from their own arguments.
    args.worker_class, args.threads, args.no_redis = "sync", 1, False
    return args


def month_window(moment: datetime) -> tuple[datetime, datetime]:
    """Next calendar month in UTC: fully ahead, so its bookings are live."""
    first = (moment.replace(day=1) + timedelta(days=32)).replace(
        day=1, hour=0, minute=0, second=0, microsecond=0
    )
    return first, (first + timedelta(days=32)).replace(day=1)


def prepare(
    args: argparse.Namespace, backend: Path, db: str, redis_url: str | None = None
) -> tuple[str, dict, dict]:
    storm.BACKEND = backend
    args.db = db
    database_url = storm.recreate_database(args)
    env = storm.server_env(database_url, redis_url)
    storm.run_quiet(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], backend, env
    )
    lanes = args.pools * args.capacity
    span = args.bookings / (lanes * args.per_slot_day)
    past = max(1.0, span - args.future_days)
    seed_env = {
        **env,
        "STORM_POOLS": str(args.pools),
        "STORM_CAPACITY": str(args.capacity),
        "STORM_LABS": "8",
        "STORM_USERS_PER_LAB": "2",
        "STORM_DAYS": str(int(args.future_days) + 400),
    }
    seed = json.loads(
        storm.run_quiet(
            [sys.executable, str(storm.BENCH / "storm_seed.py")], backend, seed_env
        )
        .strip()
        .splitlines()[-1]
    )
    t0 = time.monotonic()
    counts = seed_bookings(
        database_url, bookings=args.bookings, past_days=past, future_days=span - past
    )
    storm.log(
        args, f"seeded {sum(counts.values())} bookings in {time.monotonic() - t0:.1f} s"
    )
    # A site admin, who sees every lab's bookings in the lists (the member sees their lab's).
    seed["admin_token"] = (
        storm.run_quiet(
            [sys.executable, "manage.py", "shell", "-c", ADMIN_TOKEN_PY], backend, env
        )
        .strip()
        .splitlines()[-1]
    )
    return (
        database_url,
        env,
        {"seed": seed, "statuses": counts, "past_days": round(past, 1)},
    )


ADMIN_TOKEN_PY = """
from labgpu.accounts.models import User
from labgpu.accounts.services import token_create
user = User.objects.create_user("read-bench-admin", is_staff=True)
print(token_create(user=user, name="read-bench", scopes=["read"])[1])
"""


def measure(
    args: argparse.Namespace, port: int, token: str, pool_id: int, admin_token: str
) -> dict:
    start, end = month_window(datetime.now(UTC))
    window = {"start": start.isoformat(), "end": end.isoformat()}
    paths = {
        "busy": f"/api/v1/pools/{pool_id}/busy/?{urlencode(window)}",
        "list": "/api/v1/bookings/?"
        + urlencode(
            {
                "pool": pool_id,
                "start_after": window["start"],
                "end_before": window["end"],
            }
        ),
        "availability": f"/api/v1/pools/{pool_id}/availability/?{urlencode(window)}",
        # The read every SPA page starts with (the signed-in person, their labs and roles): a
        # small answer, so it shows what a request costs before its own rows (it is not the
        # floor: on 2026-12-07 it measured more than the compact month's 29 rows).
        "me": "/api/v1/me/",
    }
    month = {
        "pool": pool_id,
        "start_after": window["start"],
        "end_before": window["end"],
    }
    # The whole pool-month (issue 27 item 3): the full list in one page, and the compact form.
    paths["list_month"] = f"/api/v1/bookings/?{urlencode({**month, 'page_size': 500})}"
    paths["compact"] = f"/api/v1/bookings/compact/?{urlencode(month)}"
    paths["list_month_admin"] = paths["list_month"]
    paths["compact_admin"] = paths["compact"]
    member = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    admin = {**member, "Authorization": f"Bearer {admin_token}"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    times: dict[str, list[float]] = {name: [] for name in paths}
    rows: dict[str, int] = {}
    sizes: dict[str, int] = {}

    def get(name: str) -> float:
        t = time.perf_counter()
        conn.request(
            "GET", paths[name], headers=admin if name.endswith("_admin") else member
        )
        resp = conn.getresponse()
        body = resp.read()
        elapsed = (time.perf_counter() - t) * 1000
        if resp.status != 200:
            raise RuntimeError(f"{paths[name]} answered {resp.status}: {body[:300]!r}")
        if name not in rows:
            data = json.loads(body)
            sizes[name] = len(body)
            if name == "busy":
                rows[name] = len(data)
            elif name == "availability":
                rows[name] = len(data["intervals"])
            elif name == "me":
                rows[name] = 1
            elif name.startswith("compact"):
                rows[name] = len(data["bookings"])
            elif name == "list":  # a page of 50 of the month's `count`
                rows[name] = data["count"]
            else:  # the whole month in one page
                rows[name] = len(data["results"])
                if data["next"] is not None:
                    raise RuntimeError(
                        f"{paths[name]}: the month is more than one page"
                    )
                ids[name] = [b["id"] for b in data["results"]]
            if name.startswith("compact"):
                ids[name] = [b["id"] for b in data["bookings"]]
        return elapsed

    ids: dict[str, list[int]] = {}
    conn.request("GET", paths["compact"], headers=member)
    probe = conn.getresponse()
    probe.read()
    # A --ref tree from before the compact list: measure the rest.
    if probe.status == 404:
        for name in ("compact", "compact_admin"):
            del paths[name], times[name]
    for _ in range(args.warmup):
        for name in paths:
            get(name)
    for _ in range(args.requests):
        for name in paths:  # in turn, so that noise from neighbours falls on all alike
            times[name].append(get(name))
    conn.close()
    for persona in ("", "_admin"):
        compact = ids.get(f"compact{persona}")
        if compact is not None and compact != ids[f"list_month{persona}"]:
            raise RuntimeError(
                "the compact month and the full list's month hold other bookings"
            )
    result = {}
    for name, values in times.items():
        q = statistics.quantiles(values, n=100, method="inclusive")
        result[name] = {
            "p50_ms": round(statistics.median(values), 2),
            "p95_ms": round(q[94], 2),
            "p99_ms": round(q[98], 2),
            "rows": rows[name],
            "bytes": sizes[name],
        }
    result["window"] = window
    return result


def run_one(args: argparse.Namespace, backend: Path, db: str, label: str) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="read-bench-"))
    proc = redis = None
    try:
        storm.log(args, f"[{label}] database {db}, {args.bookings} bookings")
        redis = (
            RedisServer().start()
        )  # the cache as production has it, a throwaway of its own
        _, env, seeded = prepare(args, backend, db, redis.url)
        port = storm.free_port()
        logfile = open(tmp / "gunicorn.log", "w")  # noqa: SIM115
        proc = storm.start_gunicorn(args, env, port, logfile)
        token = seeded["seed"]["tokens"][0]
        try:
            storm.wait_ready(proc, port, token, timeout=180)
        except RuntimeError:
            sys.stderr.write((tmp / "gunicorn.log").read_text()[-3000:])
            raise
        storm.log(
            args, f"[{label}] measuring {args.requests} × {len(ENDPOINTS)} requests"
        )
        load_before = os.getloadavg()
        result = measure(
            args,
            port,
            token,
            seeded["seed"]["pools"][0]["id"],
            seeded["seed"]["admin_token"],
        )
        result["load_avg_1m"] = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
        result["backend"] = label
        result["bookings_by_status"] = seeded["statuses"]
        result["history_days"] = seeded["past_days"]
        return result
    finally:
        if proc is not None:
            storm.stop_gunicorn(proc)
        if redis is not None:
            redis.stop()
        if not args.keep_db:
            args.db = db
            storm.drop_database(args)
        shutil.rmtree(tmp, ignore_errors=True)


def print_table(runs: list[dict], bookings: int) -> None:
    target = TARGET_MS.get(bookings)
    print(f"{bookings} bookings in the table; target p50 ≤ {target or '—'} ms")
    print(
        f"{'backend':<28} {'endpoint':<17} {'p50':>7} {'p95':>7} {'p99':>7} {'rows':>6} "
        f"{'bytes':>8}  load"
    )
    for run in runs:
        for name in ENDPOINTS:
            r = run.get(name)
            if r is None:  # a --ref tree without the endpoint
                continue
            print(
                f"{run['backend']:<28} {name:<17} {r['p50_ms']:>7} {r['p95_ms']:>7} "
                f"{r['p99_ms']:>7} {r['rows']:>6} {r['bytes']:>8}  {run['load_avg_1m']}"
            )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    runs = [run_one(args, storm.BACKEND, args.db, storm.describe_tree())]
    if args.ref:
        with storm.ref_worktree(args.ref) as (backend, label):
            runs.append(run_one(args, backend, f"{args.db}_ref", label))
    summary = {"bookings": args.bookings, "runs": runs, "uptime": storm.uptime()}
    if not args.json:
        print_table(runs, args.bookings)
        print(f"uptime: {summary['uptime']}")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    import machine  # commit, command, and what else loaded the machine

    with machine.watch():
        sys.exit(main())

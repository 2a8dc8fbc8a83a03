"""Profile the booking create path in-process (no HTTP server): queries per create and Python time.

    .venv/bin/python bench/booking_storm.py --seconds 5 --keep-db      # leaves labgpu_bench
    cd backend && DATABASE_URL=postgres://postgres@127.0.0.1:5432/labgpu_bench \\
        ../.venv/bin/python ../bench/storm_profile.py --n 300

Sends POST /api/v1/bookings/ through Django's test client (the full middleware stack, then the
express lane or DRF; no sockets), the same random grid-aligned bookings as the storm. Prints: wall
ms per create, the SQL of one create with per-query times, query counts, and the cProfile top
functions.

The rush (most answers `pool_full`): profile a `--rush --keep-db` storm's database with `--rush`
(starts within 2 days, as the rush sends) and `--timer cpu`, so the profile counts this process's
CPU, not the wait on PostgreSQL or on a busy machine.
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver,127.0.0.1")
os.environ.setdefault("LABGPU_THROTTLE_USER", "1000000/min")

import django

django.setup()

from django.db import connection, reset_queries
from django.test import Client
from django.test.utils import CaptureQueriesContext
from labgpu.accounts.models import User
from labgpu.accounts.services import token_create
from labgpu.catalog.models import NodePool


def backend_cpu_s() -> float:
    """User + system CPU seconds of this connection's PostgreSQL backend (a local server)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()  # noqa: SIM115
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--days", type=int, default=365)
    p.add_argument("--top", type=int, default=35)
    p.add_argument(
        "--seed",
        type=int,
        default=42,
        help="of the random bookings: the same seed asks for the same slots, which fill up "
        "after a few runs on one database",
    )
    p.add_argument("--sql", action="store_true", help="print every query of one create")
    p.add_argument(
        "--rush", action="store_true", help="starts within 2 days, as the rush storm"
    )
    p.add_argument(
        "--timer",
        choices=["wall", "cpu"],
        default="wall",
        help="what cProfile counts: wall time, or this process's CPU time",
    )
    args = p.parse_args()
    if args.rush:
        args.days = 2
    users = list(User.objects.filter(username__startswith="bench-").order_by("pk"))
    tokens = [token_create(user=u, name="profile", scopes=["book"])[1] for u in users]
    pools = list(
        NodePool.objects.filter(slug__startswith="bench-").values_list("pk", flat=True)
    )
    base = (datetime.now(UTC) + timedelta(days=1)).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    rng = random.Random(args.seed)
    client = Client()

    def one() -> int:
        start = base + timedelta(minutes=30 * rng.randrange(args.days * 48))
        end = start + timedelta(minutes=30 * rng.randint(1, 8))
        body = {
            "pool": rng.choice(pools),
            "start": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "end": end.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "purpose": "booking storm",
        }
        resp = client.post(
            "/api/v1/bookings/",
            data=json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {rng.choice(tokens)}",
        )
        return resp.status_code

    for _ in range(20):  # warm caches, connections, token last_used_at
        one()
    # One create with its SQL.
    with CaptureQueriesContext(connection) as ctx:
        status = one()
    print(f"one create: status {status}, {len(ctx.captured_queries)} queries")
    kinds = Counter()
    for q in ctx.captured_queries:
        sql = q["sql"]
        kinds[sql.split()[0]] += 1
        if args.sql:
            print(f"  {float(q['time']) * 1000:6.2f} ms  {sql[:260]}")
    print(f"  by verb: {dict(kinds)}")

    # Timed, no profiler.
    statuses = Counter()
    t0 = time.perf_counter()
    with CaptureQueriesContext(connection) as ctx:
        for _ in range(args.n):
            statuses[one()] += 1
    wall = time.perf_counter() - t0
    db = sum(float(q["time"]) for q in ctx.captured_queries)
    print(
        f"{args.n} creates: {wall / args.n * 1000:.2f} ms each (single thread), "
        f"{len(ctx.captured_queries) / args.n:.1f} queries each, "
        f"SQL time {db / args.n * 1000:.2f} ms each (as seen by the client driver), "
        f"statuses {dict(statuses)}"
    )
    reset_queries()

    # CPU time of this process (Python, driver, Django) per create: unlike wall time it barely
    # moves when other work loads the machine, so it compares runs taken at different times.
    # PostgreSQL's side too: the CPU of this connection's backend process (same machine, /proc).
    pg_cpu0 = backend_cpu_s()
    cpu0 = time.process_time()
    for _ in range(args.n):
        one()
    cpu = (time.process_time() - cpu0) / args.n * 1000
    pg_cpu = (backend_cpu_s() - pg_cpu0) / args.n * 1000
    print(
        f"{args.n} creates: {cpu:.2f} ms CPU each, PostgreSQL backend {pg_cpu:.2f} ms CPU each"
    )

    prof = (
        cProfile.Profile(time.process_time)
        if args.timer == "cpu"
        else cProfile.Profile()
    )
    prof.enable()
    for _ in range(args.n):
        one()
    prof.disable()
    stats = pstats.Stats(prof)
    total = stats.total_tt
    print(
        f"--- where one create's time goes (cProfile, total {total / args.n * 1000:.1f} ms/create "
        "with profiler overhead) ---"
    )
    wanted = [
        ("django/core/handlers/base.py", "get_response", "Django handler (all)"),
        (
            "rest_framework/views.py",
            "initial",
            "DRF initial: auth + permissions + throttle",
        ),
        ("rest_framework/views.py", "perform_authentication", "  authentication"),
        (
            "rest_framework/views.py",
            "check_throttles",
            "  throttle (cache round-trips)",
        ),
        ("rest_framework/views.py", "check_permissions", "  permissions"),
        ("bookings/apis.py", "create", "BookingViewSet.create"),
        ("rest_framework/serializers.py", "is_valid", "  input serializer is_valid"),
        ("bookings/services.py", "booking_create", "  services.booking_create"),
        ("bookings/services.py", "_resolve_lab", "    _resolve_lab"),
        ("bookings/services.py", "_lock_pool", "    _lock_pool (SELECT … FOR UPDATE)"),
        ("catalog/selectors.py", "pool_allows_lab", "    pool_allows_lab"),
        ("bookings/services.py", "_check_times", "    _check_times (blackout query)"),
        ("bookings/services.py", "_allocate_slot", "    _allocate_slot"),
        ("quotas/services.py", "quota_check_and_lock", "    quota_check_and_lock"),
        ("quotas/selectors.py", "quota_usage", "      quota_usage"),
        ("django/db/models/base.py", "save", "    Model.save (booking insert)"),
        ("audit/services.py", "audit_record", "    audit_record"),
        (
            "django/db/transaction.py",
            "__exit__",
            "    transaction commit (atomic exit)",
        ),
        ("rest_framework/serializers.py", "data", "  output serializer .data"),
        (
            "psycopg/connection.py",
            "wait",
            "psycopg wait (includes waiting on PostgreSQL)",
        ),
        ("django/db/models/sql/compiler.py", "as_sql", "ORM SQL compilation (as_sql)"),
    ]
    for (file, line, func), (cc, nc, tt, ct, callers) in sorted(stats.stats.items()):
        for suffix, name, label in wanted:
            if file.endswith(suffix) and func == name:
                print(
                    f"  {label:<48} {ct / args.n * 1000:7.2f} ms  ({100 * ct / total:4.1f} %)"
                )
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(key).print_stats(args.top)
        print(f"--- cProfile by {key} ---")
        print("\n".join(out.getvalue().splitlines()[: args.top + 12]))


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    import machine  # commit, command, and what else loaded the machine

    with machine.watch():
        main()

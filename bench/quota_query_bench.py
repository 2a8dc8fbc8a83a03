#!/usr/bin/env python3
"""The quota-usage query as a lab's history grows: the old B-tree filter beside the GiST overlap.

    .venv/bin/python bench/quota_query_bench.py

Drops and creates `labgpu_quota_bench`, migrates it, makes one lab with two members and the
storm's pools (bench/storm_seed.py), then grows the lab's history of completed bookings with COPY
(bench/bulk_bookings.py) to 790, 19,000 and 48,000 rows before next month. At each size it runs the
month's usage aggregate of quotas.selectors.quota_usage for next month both ways — `start <
month_end AND end > month_begin` (before) and `tstzrange(start, end) && tstzrange(…)` (now) — under
EXPLAIN (ANALYZE, BUFFERS), best of --repeat, and prints execution time, rows the index handed
over and shared buffers read.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import booking_storm as storm
from bulk_bookings import seed_bookings

SIZES = (790, 19_000, 48_000)

PROBE = r"""
import json, os, re, sys
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from datetime import timedelta
from django.db import connection
from django.db.models import Count, DateTimeField, DurationField, ExpressionWrapper, F, Q, Sum, Value
from django.db.models.functions import Greatest, Least
from labgpu.accounts.models import Lab
from labgpu.bookings.models import Booking, Overlaps, bigint
from labgpu.catalog.models import InstanceType
from labgpu.core.timeutils import month_bounds, month_start, next_month, now

lab = Lab.objects.get(slug="bench-0")
itype = InstanceType.objects.order_by("pk").first()
begin, end = month_bounds(next_month(month_start(now())))
common = dict(status__in=Booking.QUOTA_STATUSES, pool__instance_type_id=itype.pk)
ways = {
    "before: start < end AND end > begin": Booking.objects.filter(
        start__lt=end, end__gt=begin, lab_id=lab.pk, **common
    ),
    "now: tstzrange && (GiST)": Booking.objects.filter(
        Overlaps("start", "end", begin, end), lab_id=bigint(lab.pk), **common
    ),
}
in_month = ExpressionWrapper(
    Least(F("end"), Value(end, output_field=DateTimeField()))
    - Greatest(F("start"), Value(begin, output_field=DateTimeField())),
    output_field=DurationField(),
)
out = {}
for name, rows in ways.items():
    query = rows.values("status", "gpu_count").annotate(total=Sum(in_month), n=Count("pk")).order_by()
    sql, params = query.query.sql_with_params()
    best = None
    with connection.cursor() as cursor:
        for _ in range(int(sys.argv[1])):
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            plan = "\n".join(r[0] for r in cursor.fetchall())
            ms = float(re.search(r"Execution Time: ([\d.]+)", plan).group(1))
            if best is None or ms < best[0]:
                best = (ms, plan)
    buffers = sum(int(b) for b in re.findall(r"shared hit=(\d+)", best[1].split("\n")[0]))
    out[name] = {"ms": best[0], "top_buffers": buffers, "plan": best[1]}
print(json.dumps(out))
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--db", default="labgpu_quota_bench")
    p.add_argument("--plans", action="store_true", help="print the query plans")
    p.add_argument(
        "--pg-url",
        default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432"),
    )
    args = p.parse_args()
    args.no_redis = True
    database_url = storm.recreate_database(args)
    env = storm.server_env(database_url, None)
    backend = storm.BACKEND
    try:
        storm.run_quiet(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            backend,
            env,
        )
        seed_env = {**env, "STORM_POOLS": "4", "STORM_CAPACITY": "8", "STORM_LABS": "1",
                    "STORM_USERS_PER_LAB": "2", "STORM_DAYS": "60"}  # fmt: skip
        storm.run_quiet(
            [sys.executable, str(storm.BENCH / "storm_seed.py")], backend, seed_env
        )
        have, results = 0, []
        for round_, size in enumerate(SIZES):
            # History only: every row ends before now, so all of them precede next month.
            seed_bookings(
                database_url, bookings=size - have, past_days=max(30, size / 40),
                future_days=0.01, seed=round_ + 1,
            )  # fmt: skip
            have = size
            out = subprocess.run(
                [sys.executable, "-c", PROBE, str(args.repeat)],
                cwd=backend, env=env, check=True, capture_output=True, text=True,
            )  # fmt: skip
            probe = json.loads(out.stdout.strip().splitlines()[-1])
            for name, r in probe.items():
                rows = re.findall(r"Index.*?rows=(\d+)", r["plan"])
                results.append({"earlier_rows": size, "query": name, "ms": r["ms"],
                                "index_rows": rows[0] if rows else "?"})  # fmt: skip
                if args.plans:
                    print(f"--- {size} rows, {name}\n{r['plan']}")
        print(f"{'earlier rows':>12}  {'query':<38} {'exec ms':>8}  index rows")
        for r in results:
            print(
                f"{r['earlier_rows']:>12}  {r['query']:<38} {r['ms']:>8}  {r['index_rows']}"
            )
        print(f"uptime: {storm.uptime()}")
        print(json.dumps(results))
    finally:
        storm.drop_database(args)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    import machine  # commit, command, and what else loaded the machine

    with machine.watch():
        sys.exit(main())

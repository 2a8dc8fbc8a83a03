#!/usr/bin/env python3
"""Series benchmark (issue 25 item 4): one POST /api/v1/series/ booking a 52-week weekly series,
over HTTP against gunicorn, on the bench database (100,000 bookings).

    .venv/bin/python bench/series_bench.py --bookings 100000 --requests 20

What it does (everything on loopback): the database, labs, users with `book` tokens, pools and
quotas as bench/read_bench.py makes them (bench/storm_seed.py, then --bookings rows with COPY by
bench/bulk_bookings.py, about one per slot and day, history and the next --future-days), gunicorn
as `make run` starts it; then one client asks --requests times, each for a new 52-week series
(`frequency: weekly, count: 52`, 2 hours, every one at another pool and hour so that each series
meets bookings, not its predecessors), after --warmup unmeasured ones. Prints p50/p95/max of the
whole request, how many occurrences were booked and refused (with the codes), and checks in the
database that every booked occurrence is a row of its series. Target: p50 ≤ 500 ms.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import booking_storm as storm
import psycopg
from labgpu.core.testing import RedisServer
from read_bench import parse_args as read_args
from read_bench import prepare

TARGET_P50_MS = 500.0


def parse_args(argv: list[str] | None = None):  # type: ignore[no-untyped-def]
    """read_bench's options (pools, capacity, --bookings …) with this bench's defaults; a later
    option wins. The pools take bookings 52 weeks ahead (storm_seed: future days + 400 + 30)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    defaults = ["--bookings", "100000", "--requests", "20", "--warmup", "3"]
    return read_args([*defaults, "--db", "labgpu_series_bench", *argv])


def measure(args, port: int, token: str, pools: list[dict]) -> dict:  # type: ignore[no-untyped-def]
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        "Content-Type": "application/json",
    }
    monday = (datetime.now(UTC) + timedelta(days=8)).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times, booked, refused, series_ids = [], 0, Counter(), []
    total = args.warmup + args.requests
    for i in range(total):
        pool = pools[i % len(pools)]
        start = monday + timedelta(
            days=(i // len(pools)) % 7, hours=2 * ((i // 7) % 10) + 2
        )
        body = {
            "pool": pool["id"],
            "start": start.isoformat(),
            "end": (start + timedelta(hours=2)).isoformat(),
            "frequency": "weekly",
            "count": 52,
            "timezone": "Europe/Berlin",
        }
        t = time.perf_counter()
        conn.request("POST", "/api/v1/series/", body=json.dumps(body), headers=headers)
        resp = conn.getresponse()
        data = json.loads(resp.read())
        elapsed = (time.perf_counter() - t) * 1000
        if resp.status != 201:
            raise RuntimeError(f"series answered {resp.status}: {str(data)[:300]}")
        if i < args.warmup:
            continue
        times.append(elapsed)
        series_ids.append(data["id"])
        for o in data["occurrences"]:
            if o["booking"]:
                booked += 1
            else:
                refused[o["code"]] += 1
    conn.close()
    q = statistics.quantiles(times, n=20, method="inclusive")
    return {
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(q[18], 1),
        "max_ms": round(max(times), 1),
        "requests": len(times),
        "occurrences_booked": booked,
        "occurrences_refused": dict(refused),
        "series": series_ids,
    }


def check_rows(database_url: str, series_ids: list[int], booked: int) -> int:
    with psycopg.connect(database_url) as conn:
        (rows,) = conn.execute(
            "SELECT count(*) FROM bookings_booking WHERE series_id = ANY(%s)",
            [series_ids],
        ).fetchone()
    if rows != booked:
        raise RuntimeError(
            f"{booked} occurrences answered booked, {rows} rows in the table"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="series-bench-"))
    proc = redis = None
    try:
        redis = RedisServer().start()
        database_url, env, seeded = prepare(args, storm.BACKEND, args.db, redis.url)
        port = storm.free_port()
        logfile = open(tmp / "gunicorn.log", "w")  # noqa: SIM115
        proc = storm.start_gunicorn(args, env, port, logfile)
        token = seeded["seed"]["tokens"][0]
        try:
            storm.wait_ready(proc, port, token, timeout=180)
        except RuntimeError:
            sys.stderr.write((tmp / "gunicorn.log").read_text()[-3000:])
            raise
        load_before = os.getloadavg()
        result = measure(args, port, token, seeded["seed"]["pools"])
        result["rows_checked"] = check_rows(
            database_url, result.pop("series"), result["occurrences_booked"]
        )
        result["load_avg_1m"] = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
        result["bookings_in_table"] = sum(seeded["statuses"].values())
        result["backend"] = storm.describe_tree()
        result["target_p50_ms"] = TARGET_P50_MS
        result["uptime"] = storm.uptime()
    finally:
        if proc is not None:
            storm.stop_gunicorn(proc)
        if redis is not None:
            redis.stop()
        if not args.keep_db:
            storm.drop_database(args)
        shutil.rmtree(tmp, ignore_errors=True)
    if not args.json:
        print(
            f"52-week series over {result['bookings_in_table']} bookings: p50 "
            f"{result['p50_ms']} ms, p95 {result['p95_ms']} ms, max {result['max_ms']} ms "
            f"(target p50 ≤ {TARGET_P50_MS:g} ms); {result['occurrences_booked']} booked, "
            f"refused {result['occurrences_refused']}"
        )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    import machine  # commit, command, and what else loaded the machine

    with machine.watch():
        sys.exit(main())

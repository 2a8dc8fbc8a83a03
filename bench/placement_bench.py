#!/usr/bin/env python3
"""Flexible placement benchmark (issue 25 items 3 and 4): `GET /api/v1/availability/placement/`
across 10 pools of one GPU model, over HTTP against gunicorn, on the bench database (100,000
bookings); then `POST /api/v1/bookings/place/`, checked against the table.

    .venv/bin/python bench/placement_bench.py --bookings 100000 --requests 500

What it does (everything on loopback): the database as bench/read_bench.py makes it with
--pools 40 (bench/storm_seed.py spreads the pools over four instance types, so 10 are MI300X ×1,
in tor1 and sfo3, 8 nodes each; then --bookings rows by COPY, bench/bulk_bookings.py: history,
and one booking per slot and day for the next 75 days), gunicorn as `make run` starts it; then
one client asks --requests times (after --warmup unmeasured) for "H hours of MI300X between A and
A + 7 days", H cycling through 2, 8 and 20 hours and A through the next 60 days, every third
request narrowed to one region. Prints p50/p95/p99/max of the whole request. Then --books
placements are POSTed (each time the same ask, so each must land later or elsewhere) and each
answered booking is read back from bookings_booking: the row is in the pool and at the times
answered, of the model, inside [A, B]. Target: availability p99 ≤ 50 ms.
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
import urllib.parse
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import booking_storm as storm
import psycopg
from labgpu.core.testing import RedisServer
from read_bench import parse_args as read_args
from read_bench import prepare

TARGET_P99_MS = 50.0
MODEL = "MI300X"
HOURS = ("2", "8", "20")


def parse_args(argv: list[str] | None = None):  # type: ignore[no-untyped-def]
    """read_bench's options with this bench's defaults (a later option wins), and --books."""
    argv = list(sys.argv[1:] if argv is None else argv)
    books = 20
    if "--books" in argv:
        at = argv.index("--books")
        books = int(argv[at + 1])
        del argv[at : at + 2]
    defaults = [
        "--bookings",
        "100000",
        "--pools",
        "40",
        "--requests",
        "500",
        "--warmup",
        "30",
    ]
    args = read_args([*defaults, "--db", "labgpu_placement_bench", *argv])
    args.books = books
    return args


def asks(count: int) -> list[dict]:
    base = (datetime.now(UTC) + timedelta(hours=1)).replace(
        minute=0, second=0, microsecond=0
    )
    made = []
    for i in range(count):
        after = base + timedelta(days=(i * 7) % 60, hours=(i * 5) % 24)
        ask = {
            "gpu_model": MODEL,
            "hours": HOURS[i % len(HOURS)],
            "after": after.isoformat(),
            "before": (after + timedelta(days=7)).isoformat(),
        }
        if i % 3 == 2:
            ask["regions"] = "tor1"
        made.append(ask)
    return made


def percentile(times: list[float], p: int) -> float:
    return round(statistics.quantiles(times, n=100, method="inclusive")[p - 1], 1)


def measure(args, port: int, token: str) -> dict:  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times, found, pools = [], 0, set()
    for i, ask in enumerate(asks(args.warmup + args.requests)):
        url = "/api/v1/availability/placement/?" + urllib.parse.urlencode(ask)
        t = time.perf_counter()
        conn.request("GET", url, headers=headers)
        resp = conn.getresponse()
        data = json.loads(resp.read())
        elapsed = (time.perf_counter() - t) * 1000
        if resp.status != 200:
            raise RuntimeError(f"placement answered {resp.status}: {str(data)[:300]}")
        if i < args.warmup:
            continue
        times.append(elapsed)
        found += bool(data["windows"])
        pools.update(w["pool"] for w in data["windows"])
    conn.close()
    return {
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": percentile(times, 95),
        "p99_ms": percentile(times, 99),
        "max_ms": round(max(times), 1),
        "requests": len(times),
        "answers_with_windows": found,
        "pools_answered": len(pools),
    }


def book(args, port: int, token: str) -> tuple[dict, list[tuple[dict, dict]]]:  # type: ignore[no-untyped-def]
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        "Content-Type": "application/json",
    }
    after = (datetime.now(UTC) + timedelta(days=3)).replace(
        hour=9, minute=0, second=0, microsecond=0
    )
    ask = {
        "gpu_model": MODEL,
        "hours": "8",
        "after": after.isoformat(),
        "before": (after + timedelta(days=2)).isoformat(),
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times, booked = [], []
    for _ in range(args.books):
        t = time.perf_counter()
        conn.request(
            "POST", "/api/v1/bookings/place/", body=json.dumps(ask), headers=headers
        )
        resp = conn.getresponse()
        data = json.loads(resp.read())
        times.append((time.perf_counter() - t) * 1000)
        if resp.status != 201:
            raise RuntimeError(f"place answered {resp.status}: {str(data)[:300]}")
        booked.append((ask, data))
    conn.close()
    return {
        "p50_ms": round(statistics.median(times), 1),
        "max_ms": round(max(times), 1),
        "requests": len(times),
    }, booked


def check_rows(database_url: str, booked: list[tuple[dict, dict]]) -> int:
    """Each answered booking is a live row of an MI300X pool at the answered pool and times,
    inside the asked [after, before)."""
    with psycopg.connect(database_url) as conn:
        for ask, answer in booked:
            row = conn.execute(
                'SELECT b.pool_id, b.start, b."end", it.gpu_model FROM bookings_booking b '
                "JOIN catalog_nodepool p ON p.id = b.pool_id "
                "JOIN catalog_instancetype it ON it.id = p.instance_type_id "
                "WHERE b.id = %s AND b.status = 'scheduled'",
                [answer["id"]],
            ).fetchone()
            if row is None:
                raise RuntimeError(f"booking {answer['id']} answered, no scheduled row")
            pool_id, start, end, model = row
            after = datetime.fromisoformat(ask["after"])
            before = datetime.fromisoformat(ask["before"])
            if (
                pool_id != answer["pool"]
                or model != MODEL
                or start != datetime.fromisoformat(answer["start"])
                or end != datetime.fromisoformat(answer["end"])
                or start < after
                or end > before
            ):
                raise RuntimeError(f"booking {answer['id']}: row {row} against {ask}")
    return len(booked)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="placement-bench-"))
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
        with psycopg.connect(database_url) as conn:
            (model_pools,) = conn.execute(
                "SELECT count(*) FROM catalog_nodepool p JOIN catalog_instancetype it "
                "ON it.id = p.instance_type_id WHERE it.gpu_model = %s",
                [MODEL],
            ).fetchone()
        load_before = os.getloadavg()
        result = {"availability": measure(args, port, token)}
        result["place"], booked = book(args, port, token)
        result["rows_checked"] = check_rows(database_url, booked)
        result["load_avg_1m"] = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
        result["pools_of_model"] = model_pools
        result["bookings_in_table"] = sum(seeded["statuses"].values())
        result["backend"] = storm.describe_tree()
        result["target_p99_ms"] = TARGET_P99_MS
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
        a = result["availability"]
        print(
            f"placement availability over {result['pools_of_model']} {MODEL} pools, "
            f"{result['bookings_in_table']} bookings: p50 {a['p50_ms']} ms, p95 {a['p95_ms']} ms, "
            f"p99 {a['p99_ms']} ms, max {a['max_ms']} ms (target p99 ≤ {TARGET_P99_MS:g} ms); "
            f"place p50 {result['place']['p50_ms']} ms, {result['rows_checked']} rows checked"
        )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    import machine  # commit, command, and what else loaded the machine

    with machine.watch():
        sys.exit(main())

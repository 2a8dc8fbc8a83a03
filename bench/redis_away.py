#!/usr/bin/env python3
"""What a booking request costs while Redis (broker and cache) is away (issue 29, item 9).

    .venv/bin/python bench/redis_away.py --requests 40

Everything on loopback: a throwaway database (--db, dropped and created, seeded by
bench/provision_seed.py), a throwaway redis-server as broker (db 1) and cache (db 0), gunicorn
(sync, 1 worker: one process, so its circuit breakers see every request) with production settings.
No Celery worker: a booking's start waits in the queue or, with Redis away, in the outbox.

Three phases of --requests "book now" requests each (POST /api/v1/bookings/, one at a time,
--pause seconds apart), timed at the client:
  up       Redis answers;
  refused  redis-server stopped: connections are refused;
  hung     redis-server stopped with SIGSTOP: the kernel accepts connections, nothing answers
           (the worst case for timeouts: every step waits for its socket timeout).
Prints p50 / p90 / max per phase, the extra over `up`, answers by status, outbox rows written,
and the load average before and after. Exit 0 when every answer was 201 and the max extra of
each outage phase is at most --budget-ms (200).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import booking_storm as storm
import httpx
import provision_storm as pstorm
import psycopg

DB_NAME = "labgpu_redis_away"
PHASES = ("up", "refused", "hung")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--requests", type=int, default=40, help="booking requests per phase"
    )
    p.add_argument("--pause", type=float, default=0.25, help="seconds between requests")
    p.add_argument(
        "--budget-ms", type=float, default=200, help="allowed extra per request"
    )
    p.add_argument(
        "--timeout", type=float, default=30, help="client timeout per request (s)"
    )
    p.add_argument(
        "--pg-url",
        default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432"),
        help="local PostgreSQL server (trust auth); the bench database is created on it",
    )
    p.add_argument(
        "--db", default=DB_NAME, help=f"database to drop, create and use ({DB_NAME})"
    )
    args = p.parse_args(argv)
    if not 1 <= args.requests <= 200 or not 0 <= args.pause <= 10:
        p.error("--requests 1..200, --pause 0..10")
    if not storm.is_local(args.pg_url):
        p.error("--pg-url must point at a loopback PostgreSQL")
    if args.db in pstorm.RESERVED_DBS | {pstorm.DB_NAME}:
        p.error(f"--db must not be {args.db}")
    # the helpers shared with the other benches read these
    args.set, args.workers, args.worker_class, args.threads = [], 1, "sync", 1
    return args


def stats_ms(values: list[float]) -> dict:
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 1),
        "p90": round(ordered[max(0, int(0.9 * len(ordered)) - 1)], 1),
        "max": round(ordered[-1], 1),
    }


def outbox_rows(database_url: str) -> int:
    with psycopg.connect(database_url, autocommit=True) as conn:
        return conn.execute("SELECT COUNT(*) FROM core_outboxmessage").fetchone()[0]


def run_phase(
    args, client: httpx.Client, seed: dict, offset: int
) -> tuple[list[float], dict]:
    end = (datetime.now(UTC) + timedelta(hours=2)).replace(second=0, microsecond=0)
    took, answers = [], {}
    for i in range(offset, offset + args.requests):
        body = {"pool": seed["pools"][i % len(seed["pools"])], "end": end.isoformat()}
        token = seed["tokens"][i % len(seed["tokens"])]
        started = time.perf_counter()
        try:
            response = client.post(
                "/api/v1/bookings/",
                json=body,
                headers={"Authorization": f"Bearer {token}"},
            )
            answer = str(response.status_code)
        except httpx.HTTPError as error:  # e.g. no answer within the client's timeout
            answer = type(error).__name__
        took.append((time.perf_counter() - started) * 1000)
        answers[answer] = answers.get(answer, 0) + 1
        time.sleep(args.pause)
    return took, answers


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="redis-away-"))
    (tmp / "mail").mkdir()
    redis = web = None
    database_url = ""
    load_before = os.getloadavg()
    try:
        database_url = storm.recreate_database(args)
        redis = pstorm.RedisServer().start()
        port = storm.free_port()
        api = f"http://127.0.0.1:{port}"
        env = pstorm.server_env(args, database_url, redis.url, api, tmp)
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=storm.BACKEND, env=env, check=True,
        )  # fmt: skip
        out = subprocess.run(
            [sys.executable, str(storm.BENCH / "provision_seed.py")],
            cwd=storm.BACKEND,
            env={
                **env,
                # never contacted: no worker runs, nothing is provisioned
                "PSTORM_EMULATOR_URL": "http://127.0.0.1:9",
                "PSTORM_BOOKINGS": str(args.requests * (len(PHASES) + 1)),  # + the warm-up
                "PSTORM_LABS": "4",
                "PSTORM_USERS_PER_LAB": "10",
            },
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        seed = json.loads(out.stdout.strip().splitlines()[-1])
        web_log = (tmp / "gunicorn.log").open("w")
        web = storm.start_gunicorn(
            args, {**env, "LABGPU_LOG_LEVEL": "WARNING"}, port, web_log
        )
        storm.wait_ready(web, port, seed["tokens"][0])
        results = {}
        with httpx.Client(base_url=api, timeout=args.timeout) as client:
            run_phase(args, client, seed, 10_000)  # warm-up: connections, caches
            for index, phase in enumerate(PHASES):
                if phase == "refused":
                    redis.stop()
                elif phase == "hung":
                    redis.start()
                    redis.process.send_signal(signal.SIGSTOP)
                rows_before = outbox_rows(database_url)
                took, answers = run_phase(args, client, seed, index * args.requests)
                results[phase] = {
                    "ms": stats_ms(took),
                    "answers": answers,
                    "outbox_rows_written": outbox_rows(database_url) - rows_before,
                }
            redis.process.send_signal(signal.SIGCONT)
        base = results["up"]["ms"]
        for phase in PHASES[1:]:
            ms = results[phase]["ms"]
            results[phase]["extra_ms"] = {
                k: round(ms[k] - base["p50"], 1) for k in ("p50", "p90", "max")
            }
        summary = {
            "requests_per_phase": args.requests,
            "pause_s": args.pause,
            "web": "gunicorn sync × 1, production settings",
            "commit": pstorm.git_commit(),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "cpus": os.cpu_count(),
            "phases": results,
        }
        summary["ok"] = all(
            r["answers"] == {"201": args.requests} for r in results.values()
        ) and all(results[p]["extra_ms"]["max"] <= args.budget_ms for p in PHASES[1:])
        for phase in PHASES:
            r = results[phase]
            extra = r.get("extra_ms", {})
            print(
                f"{phase:<8} p50 {r['ms']['p50']} ms, p90 {r['ms']['p90']} ms, max "
                f"{r['ms']['max']} ms; extra over up (p50) {extra or '-'}; answers "
                f"{r['answers']}; outbox rows {r['outbox_rows_written']}"
            )
        print(json.dumps(summary))
        return 0 if summary["ok"] else 1
    finally:
        if web is not None:
            storm.stop_gunicorn(web)
        if redis is not None:
            if redis.process is not None and redis.process.poll() is None:
                redis.process.send_signal(signal.SIGCONT)
            redis.stop()
        if database_url:
            storm.drop_database(args)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    import machine  # commit, command, and what else loaded the machine

    with machine.watch():
        sys.exit(main())

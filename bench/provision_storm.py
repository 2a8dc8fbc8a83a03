#!/usr/bin/env python3
"""Provision storm: N bookings due within one minute become droplets, get ready, are torn down.

    .venv/bin/python bench/provision_storm.py --bookings 200 --window 60 --boot 60

What it does (everything on loopback; droplet IPs are TEST-NET addresses nobody connects to):
  1. drops and creates the database (--db, default labgpu_provision_storm), migrates it and seeds
     it (bench/provision_seed.py): an emulator account, one MI300X ×1 type, one pool per region
     the size is sold in (lead 0, grace 0, 1-minute grid), labs, users with SSH keys and tokens;
  2. starts the parts the normal setup runs (backend/Procfile, `make run`): a throwaway
     redis-server (broker, cache, provider budget), the DigitalOcean emulator (backend/emulator)
     with its DigitalOcean rate limits and a scaled boot time (--boot seconds: real GPU droplets
     take minutes), whose active droplets start the real `labgpu-agent` in fixture mode; gunicorn
     (sync, 3 workers) and one Celery worker with the embedded beat (threads × 4). Production
     intervals (poll, beat, leases) unless --set overrides one;
  3. books: N "book now" requests through the API, spread evenly over --window seconds, so N
     bookings start within the window; waits until every booking is ready (or failed);
  4. after --hold seconds, ends them: N cancels through the API, spread over --end-window;
     waits until every booking is completed, every node destroyed and metered;
  5. prints time to all ready, the provider's request rate and 429s (the emulator's own
     counters), duplicate droplets per node attempt and orphans left (the emulator's own
     ledger), and per-hop orchestration overhead p50/p99 from the database's
     timestamps and the emulator's record;
  6. stops everything it started (the emulator stops its agents) and drops the database
     (unless --keep-db).

Bounds: at most 300 bookings (each agent is a ~40 MB Python process while its node lives; the
bench refuses to start without the memory for them), windows ≤ 120 s, boot 1..900 s. Exit status
0 when every booking was ready by its start + boot + 120 s (a node later than that, stranded in
`checking`, failed or replaced, counts as failed) and completed, with no duplicate, no orphan, no
429 that cost a task, the provider's peak under its 250 requests/min and no 5xx answered by the
API; 1 otherwise. The other time targets are reported, not asserted.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import booking_storm as storm
import httpx
import psycopg

REPO = storm.REPO
BACKEND = storm.BACKEND
BENCH = storm.BENCH
VENV_BIN = storm.VENV_BIN
sys.path.insert(0, str(BACKEND))

from emulator.testing import start_emulator
from labgpu.provisioning.tests.harness import RedisServer, Worker, wait_for

DB_NAME = "labgpu_provision_storm"
# gunicorn's access log: time, request line, status, and the time spent in the worker (µs)
ACCESS_FORMAT = '%(t)s "%(r)s" %(s)s %(D)s'
AGENT_CALL = re.compile(r'"POST /api/v1/agent/(\w+)/ HTTP/[\d.]+" (\d{3}) (\d+)$')
# booking_storm.py drops labgpu_bench; never take (and so never drop) another bench's database.
RESERVED_DBS = storm.PROTECTED_DBS | {storm.DB_NAME}
MAX_BOOKINGS, MAX_WINDOW_S, MAX_BOOT_S = 300, 120, 900
AGENT_RSS_MB = 45  # measured: `labgpu-agent run` ≈ 40 MB resident while it heartbeats
EMULATOR_TOKEN = "provision-storm-token"
DO_RATE_PER_MIN, DO_RATE_PER_HOUR = 250, 5000
HOP_TARGET_P99_S = 2.0
READY_TARGET_EXTRA_S = 60.0
# A booking whose node is not ready by its start + boot + this many seconds counts as failed.
READY_DEADLINE_EXTRA_S = 120.0
DONE = ("completed", "failed", "cancelled", "expired", "rejected")
HOPS = [
    ("booking_to_node_request", "booking due → node requested"),
    ("request_to_create_post", "node requested → create POST at the provider"),
    ("active_to_bootstrap", "droplet active → agent bootstrap (includes agent start)"),
    ("report_to_ready", "passing report → node ready"),
    ("end_to_destroy_confirmed", "booking ended → destroy confirmed"),
    ("destroy_to_usage", "destroy confirmed → usage record"),
]
# What the provider and the agent take (not orchestration), shown for scale, and the splits of
# two hops above into their parts.
OTHER_SEGMENTS = [
    ("provider_boot", "create POST → droplet active (provider)"),
    (
        "active_to_agent_process",
        "  active → agent process started (emulator's cloud-init)",
    ),
    (
        "agent_process_to_bootstrap",
        "  agent process → bootstrap stored (agent start + API)",
    ),
    ("bootstrap_to_report", "agent bootstrap → report stored (agent)"),
    ("end_to_delete", "  booking ended → DELETE at the provider"),
    ("provider_delete", "  DELETE → droplet gone (provider)"),
    ("gone_to_confirmed", "  droplet gone → destroy confirmed"),
]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--bookings", type=int, default=200, help=f"bookings (≤ {MAX_BOOKINGS})"
    )
    p.add_argument(
        "--window", type=float, default=60, help="seconds over which they start"
    )
    p.add_argument(
        "--boot",
        type=float,
        default=60,
        help="emulated droplet boot seconds (scaled down)",
    )
    p.add_argument(
        "--ip-delay",
        type=float,
        default=2,
        help="seconds until a new droplet has its IP",
    )
    p.add_argument(
        "--hold", type=float, default=10, help="seconds all stay ready before ending"
    )
    p.add_argument(
        "--end-window", type=float, help="seconds over which they end (--window)"
    )
    p.add_argument(
        "--ready-timeout", type=float, help="give up waiting for ready after (s)"
    )
    p.add_argument(
        "--teardown-timeout", type=float, default=600, help="… for teardown (s)"
    )
    p.add_argument(
        "--web-workers", type=int, default=3, help="gunicorn sync workers (make run)"
    )
    p.add_argument(
        "--celery-workers",
        type=int,
        default=1,
        help="Celery workers (threads × 4); the first runs the beat, as `make run` does",
    )
    p.add_argument("--labs", type=int, default=4)
    p.add_argument("--users-per-lab", type=int, default=5)
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a LABGPU_* setting for web and workers (e.g. LABGPU_POLL_INTERVAL_S=5); "
        "default: production values",
    )
    p.add_argument(
        "--pg-url",
        default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432"),
        help="local PostgreSQL server (trust auth); the bench database is created on it",
    )
    p.add_argument(
        "--db", default=DB_NAME, help=f"database to drop, create and use ({DB_NAME})"
    )
    p.add_argument(
        "--keep-db", action="store_true", help="leave the database for inspection"
    )
    p.add_argument(
        "--keep-logs", help="copy the logs (emulator, worker, web, agents) here"
    )
    p.add_argument("--json", action="store_true", help="print only the JSON summary")
    args = p.parse_args(argv)
    args.end_window = args.window if args.end_window is None else args.end_window
    if not 1 <= args.bookings <= MAX_BOOKINGS:
        p.error(f"--bookings must be 1..{MAX_BOOKINGS}")
    if not (0 <= args.window <= MAX_WINDOW_S and 0 <= args.end_window <= MAX_WINDOW_S):
        p.error(f"--window and --end-window must be 0..{MAX_WINDOW_S}")
    if not 1 <= args.boot <= MAX_BOOT_S or not 0 <= args.ip_delay <= args.boot:
        p.error(f"--boot must be 1..{MAX_BOOT_S}, --ip-delay 0..boot")
    if not 0 <= args.hold <= 600:
        p.error("--hold must be 0..600")
    if args.ready_timeout is None:
        # past every booking's deadline (start + boot + 120 s) nothing more counts as ready
        args.ready_timeout = args.window + args.boot + READY_DEADLINE_EXTRA_S + 30
    if not 1 <= args.web_workers <= 8 or not 1 <= args.celery_workers <= 4:
        p.error("--web-workers 1..8, --celery-workers 1..4")
    if not 1 <= args.labs <= 50 or not 1 <= args.users_per_lab <= 50:
        p.error("--labs and --users-per-lab 1..50")
    for item in args.set:
        if not re.fullmatch(r"LABGPU_[A-Z0-9_]+=.*", item):
            p.error(f"--set takes LABGPU_NAME=VALUE, not {item!r}")
    if not storm.is_local(args.pg_url):
        p.error("--pg-url must point at a loopback PostgreSQL")
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", args.db) or args.db in RESERVED_DBS:
        p.error(
            f"--db must be a plain lower-case name, not one of {sorted(RESERVED_DBS)}"
        )
    # booking_storm's helpers read these
    args.workers, args.worker_class, args.threads = args.web_workers, "sync", 1
    return args


def log(args: argparse.Namespace, message: str) -> None:
    if not args.json:
        stamp = datetime.now(UTC).strftime("%H:%M:%S")
        print(f"[provision-storm {stamp}] {message}", file=sys.stderr, flush=True)


def mem_available_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    return 0


def server_env(
    args: argparse.Namespace, database_url: str, redis_url: str, api: str, tmp: Path
):
    """The environment web and workers share: production settings, loopback services."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "LABGPU_"))
    }
    env.pop("REDIS_URL", None)
    env.pop("CELERY_BROKER_URL", None)
    base = redis_url.rsplit("/", 1)[0]
    env.update(
        DATABASE_URL=database_url,
        DJANGO_SETTINGS_MODULE="config.settings",
        DJANGO_SECRET_KEY="provision-storm-" + os.urandom(16).hex(),
        DJANGO_DEBUG="0",
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        # compose: cache on redis db 0, broker on db 1
        REDIS_URL=f"{base}/0",
        CELERY_BROKER_URL=f"{base}/1",
        LABGPU_PROVIDER_REDIS_URL=f"{base}/0",
        LABGPU_PUBLIC_API_URL=api,
        LABGPU_PROVIDER_TOKEN_EMULATOR=EMULATOR_TOKEN,
        # provider tokens go to api.digitalocean.com only, unless an origin is listed (the emulator)
        LABGPU_PROVIDER_ALLOWED_BASE_URLS="http://127.0.0.1",
        LABGPU_LOG_LEVEL="INFO",
        DJANGO_EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend",
        LABGPU_EMAIL_FILE_PATH=str(tmp / "mail"),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONPATH=str(BACKEND),
    )
    for item in args.set:
        name, value = item.split("=", 1)
        env[name] = value
    return env


# --- the storm ------------------------------------------------------------------------------------


def paced(count: int, window_s: float, action, threads: int = 8) -> list:
    """Run action(i) for i in range(count), the i-th at start + i × window/count; returns results
    in order. A pool of threads keeps one slow answer from delaying the next send."""
    start = time.monotonic()
    step = window_s / count if count else 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        futures = []
        for i in range(count):
            delay = start + i * step - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            futures.append(pool.submit(action, i))
        return [f.result() for f in futures]


def create_bookings(args, api: str, seed: dict) -> list[dict]:
    end = (datetime.now(UTC) + timedelta(hours=2)).replace(second=0, microsecond=0)
    tokens, pools = seed["tokens"], seed["pools"]
    client = httpx.Client(base_url=api, timeout=60)

    def book(i: int) -> dict:
        token = tokens[i % len(tokens)]
        sent = time.time()
        try:
            response = client.post(
                "/api/v1/bookings/",
                json={
                    "pool": pools[i % len(pools)],
                    "end": end.isoformat(),
                    "purpose": "storm",
                },
                headers={"Authorization": f"Bearer {token}"},
            )
        except httpx.HTTPError as error:
            return {
                "i": i,
                "sent": sent,
                "status": None,
                "error": repr(error),
                "token": token,
            }
        body = (
            response.json()
            if response.headers.get("content-type", "").startswith("application/json")
            else {}
        )
        return {
            "i": i,
            "sent": sent,
            "status": response.status_code,
            "id": body.get("id"),
            "code": body.get("code"),
            "token": token,
        }

    try:
        return paced(args.bookings, args.window, book)
    finally:
        client.close()


def cancel_bookings(args, api: str, made: list[dict]) -> list[dict]:
    client = httpx.Client(base_url=api, timeout=60)
    live = [m for m in made if m.get("id")]

    def cancel(i: int) -> dict:
        item = live[i]
        sent = time.time()
        try:
            response = client.post(
                f"/api/v1/bookings/{item['id']}/cancel/",
                headers={"Authorization": f"Bearer {item['token']}"},
            )
            status, code = response.status_code, response.json().get("code")
        except (httpx.HTTPError, ValueError) as error:
            status, code = None, repr(error)
        return {"id": item["id"], "sent": sent, "status": status, "code": code}

    try:
        return paced(len(live), args.end_window, cancel)
    finally:
        client.close()


class Watcher:
    """Samples the emulator's state (droplets, counters) in the background: its droplets leave
    the state once deleted, so the samples keep their boot times for the hop computation."""

    def __init__(self, emulator, interval_s: float = 1.0) -> None:
        self.emulator = emulator
        self.interval_s = interval_s
        self.droplets: dict[int, dict] = {}
        self.requests: list[
            tuple[float, int]
        ] = []  # (time, the emulator's request counter)
        self.agent_started: dict[
            int, float
        ] = {}  # droplet id -> its agent's process start
        self.min_mem_mb = mem_available_mb()
        self.max_agents = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Watcher:  # noqa: PYI034
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sample()
            except httpx.HTTPError:
                pass  # a busy moment; the next sample catches up

    def sample(self) -> dict:
        state = self.emulator.state()
        moment = time.time()
        self.requests.append((moment, state["counters"]["requests"]))
        running = 0
        for droplet in state["droplets"]:
            self.droplets.setdefault(droplet["id"], {}).update(droplet)
            running += droplet["agent"]["status"] == "running"
            pid = droplet["agent"]["pid"]
            if pid and droplet["id"] not in self.agent_started:
                started = process_start_time(pid)
                if started is not None:
                    self.agent_started[droplet["id"]] = started
        self.max_agents = max(self.max_agents, running)
        self.min_mem_mb = min(self.min_mem_mb, mem_available_mb())
        return state


# When the kernel booted, to 10 ms (btime in /proc/stat is rounded down to the second).
BOOT_TIME = time.time() - float(Path("/proc/uptime").read_text().split()[0])


def process_start_time(pid: int) -> float | None:
    """When a process started (unix time, 10 ms resolution), from /proc; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return BOOT_TIME + int(fields[19]) / storm.CLK_TCK  # field 22 of stat: starttime


def db_counts(database_url: str) -> tuple[dict, dict]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        bookings = dict(
            conn.execute(
                "SELECT status, COUNT(*) FROM bookings_booking GROUP BY status"
            )
        )
        nodes = dict(
            conn.execute(
                "SELECT status, COUNT(*) FROM provisioning_node GROUP BY status"
            )
        )
    return bookings, nodes


def wait_until(args, database_url: str, done, timeout_s: float, label: str) -> bool:
    deadline = time.monotonic() + timeout_s
    last_log = 0.0
    while time.monotonic() < deadline:
        bookings, nodes = db_counts(database_url)
        if done(bookings, nodes):
            log(args, f"{label}: bookings {bookings}, nodes {nodes}")
            return True
        if time.monotonic() - last_log >= 10:
            log(args, f"waiting for {label}: bookings {bookings}, nodes {nodes}")
            last_log = time.monotonic()
        time.sleep(1)
    log(args, f"gave up waiting for {label} after {timeout_s:.0f} s")
    return False


# --- the record -----------------------------------------------------------------------------------

EMU_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \w+ emulator(?:\.\w+)?: "
    r"(?:created droplet (\d+) \(([^,]+),|droplet (\d+) \(([^)]+)\) is active)"
)


def emulator_log_record(path: Path) -> dict[str, dict]:
    """From the emulator's own log: every create (droplet id, name, time) and activation."""
    creates: dict[int, dict] = {}
    for line in path.read_text(errors="replace").splitlines():
        match = EMU_LINE.match(line)
        if not match:
            continue
        # the emulator logs local time (logging's asctime) on this same machine
        moment = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if match.group(2):
            creates[int(match.group(2))] = {"name": match.group(3), "created": moment}
        elif int(match.group(4)) in creates:
            creates[int(match.group(4))]["active"] = moment
    return creates


RECORD_SQL = {
    "bookings": """
        SELECT id, EXTRACT(EPOCH FROM created_at), EXTRACT(EPOCH FROM reserved_start),
               EXTRACT(EPOCH FROM ended_at), status
        FROM bookings_booking""",
    "nodes": """
        SELECT n.id, n.booking_id, n.attempt, n.status, n.provider_id, n.failure_reason,
               EXTRACT(EPOCH FROM n.created_at), EXTRACT(EPOCH FROM n.active_at),
               EXTRACT(EPOCH FROM n.bootstrap_used_at), EXTRACT(EPOCH FROM n.ready_at),
               EXTRACT(EPOCH FROM n.destroy_requested_at), EXTRACT(EPOCH FROM n.destroyed_at),
               (SELECT EXTRACT(EPOCH FROM MIN(h.created_at)) FROM health_healthreport h
                 WHERE h.node_id = n.id AND h.verdict IN ('pass', 'warn')),
               (SELECT EXTRACT(EPOCH FROM MIN(h.created_at)) FROM health_healthreport h
                 WHERE h.node_id = n.id),
               (SELECT EXTRACT(EPOCH FROM MIN(u.created_at)) FROM usage_usagerecord u
                 WHERE u.node_id = n.id),
               (SELECT COUNT(*) FROM usage_usagerecord u WHERE u.node_id = n.id)
        FROM provisioning_node n""",
    # I-8: usage is recorded per droplet
    "metered_droplets": """
        SELECT droplet_id FROM usage_usagerecord""",
}


def read_record(database_url: str) -> tuple[dict, list[dict], set[str]]:
    """Bookings and nodes with their timestamps (epoch seconds), and the droplet ids that have a
    usage record."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        bookings = {
            row[0]: {
                "created": float(row[1]),
                "due": max(float(row[1]), float(row[2])),
                "ended": float(row[3]) if row[3] is not None else None,
                "status": row[4],
            }
            for row in conn.execute(RECORD_SQL["bookings"])
        }
        keys = [
            *(
                "id",
                "booking",
                "attempt",
                "status",
                "provider_id",
                "failure",
                "created",
            ),
            *("active", "bootstrap", "ready", "destroy_requested", "destroyed"),
            *("passing_report", "first_report", "usage_created", "usage_records"),
        ]
        nodes = []
        for row in conn.execute(RECORD_SQL["nodes"]):
            node = dict(zip(keys, row, strict=True))
            for key in keys[6:]:
                if node[key] is not None and key != "usage_records":
                    node[key] = float(node[key])
            nodes.append(node)
        metered = {row[0] for row in conn.execute(RECORD_SQL["metered_droplets"])}
    return bookings, nodes, metered


def percentiles(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ordered = sorted(values)

    def rank(q: float) -> float:  # nearest rank
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 3),
        "p99": round(rank(0.99), 3),
        "max": round(ordered[-1], 3),
    }


def hop_values(
    bookings: dict,
    nodes: list[dict],
    droplets: dict[int, dict],
    agent_started: dict[int, float],
) -> dict:
    by_name: dict[str, list[dict]] = {}
    for droplet_id, droplet in droplets.items():
        by_name.setdefault(droplet["name"], []).append({"id": droplet_id, **droplet})
    hops: dict[str, list[float]] = {key: [] for key, _ in HOPS + OTHER_SEGMENTS}

    def add(key: str, later: float | None, earlier: float | None) -> None:
        if later is not None and earlier is not None:
            hops[key].append(later - earlier)

    for node in nodes:
        booking = bookings[node["booking"]]
        if node["attempt"] == 1:
            add("booking_to_node_request", node["created"], booking["due"])
        made = by_name.get(f"labgpu-node-{node['id']}", [])
        recorded = next((d for d in made if str(d["id"]) == node["provider_id"]), None)
        first = min(made, key=lambda d: d["created"]) if made else None
        add("request_to_create_post", first and first["created"], node["created"])
        if recorded is not None:
            add("provider_boot", recorded.get("active"), recorded["created"])
            add("active_to_bootstrap", node["bootstrap"], recorded.get("active"))
            started = agent_started.get(recorded["id"])
            add("active_to_agent_process", started, recorded.get("active"))
            add("agent_process_to_bootstrap", node["bootstrap"], started)
        add("bootstrap_to_report", node["first_report"], node["bootstrap"])
        add("report_to_ready", node["ready"], node["passing_report"])
        # only nodes still live when their booking ended (not a failed, replaced one)
        ended, asked = booking["ended"], node["destroy_requested"]
        if ended is not None and asked is not None and asked >= ended - 1:
            add("end_to_destroy_confirmed", node["destroyed"], ended)
            if recorded is not None:
                add("end_to_delete", recorded.get("delete_requested"), ended)
                add(
                    "provider_delete",
                    recorded.get("gone"),
                    recorded.get("delete_requested"),
                )
                add("gone_to_confirmed", node["destroyed"], recorded.get("gone"))
        add("destroy_to_usage", node["usage_created"], node["destroyed"])
    return hops


def requests_per_minute(samples: list[tuple[float, int]]) -> float:
    """The busiest 60 s of the run from the sampled request counter (a cross-check of the
    emulator's own peak)."""
    best, j = 0, 0
    for i in range(len(samples)):
        while samples[i][0] - samples[j][0] > 60:
            j += 1
        best = max(best, samples[i][1] - samples[j][1])
    return best


def agent_calls(path: Path) -> dict[str, dict]:
    """Seconds the web tier spent on each kind of agent call (bootstrap, reports, heartbeat), from
    its access log: the API's share of the agent hops (time queued before a worker took the
    request is not in it)."""
    durations: dict[str, list[float]] = {}
    statuses: dict[str, dict[str, int]] = {}
    for line in path.read_text(errors="replace").splitlines():
        match = AGENT_CALL.search(line)
        if match:
            kind, status, micros = match.groups()
            durations.setdefault(kind, []).append(int(micros) / 1e6)
            statuses.setdefault(kind, {})
            statuses[kind][status] = statuses[kind].get(status, 0) + 1
    return {
        k: {**percentiles(v), "statuses": statuses[k]} for k, v in durations.items()
    }


def cpu_snapshot(web, workers, emulator, watcher, database_url: str) -> dict:
    """CPU seconds so far of each part (processes alive now; the agents all are once every node
    is ready)."""
    agents = [
        d["agent"]["pid"] for d in watcher.droplets.values() if d["agent"].get("pid")
    ]
    agent_s = storm.proc_cpu_s([pid for pid in agents if process_start_time(pid)])
    return {
        "gunicorn_s": round(storm.proc_cpu_s(storm.group_pids(web.pid)), 1),
        "celery_s": round(
            sum(storm.proc_cpu_s(storm.group_pids(w.process.pid)) for w in workers), 1
        ),
        "emulator_s": round(
            storm.proc_cpu_s(storm.group_pids(emulator.process.pid)), 1
        ),
        "agents_s": round(agent_s, 1),
        "agents": len(agents),
        "postgres_s": round(
            storm.proc_cpu_s(storm.postgres_backend_pids(database_url)), 1
        ),
    }


def grep_count(path: Path, pattern: str) -> int:
    if not path.exists():
        return 0
    rx = re.compile(pattern)
    return sum(
        1 for line in path.read_text(errors="replace").splitlines() if rx.search(line)
    )


def summarize(
    args,
    *,
    made,
    cancels,
    bookings,
    nodes,
    metered,
    creates,
    state_end,
    watcher,
    times,
    logs,
):
    counters = state_end["counters"]
    settings = state_end["settings"]
    per_name: dict[str, int] = {}
    for droplet in creates.values():
        per_name[droplet["name"]] = per_name.get(droplet["name"], 0) + 1
    node_names = {f"labgpu-node-{n['id']}" for n in nodes}
    duplicates = sum(count - 1 for count in per_name.values() if count > 1)
    strangers = sorted(set(per_name) - node_names)
    orphans = [e for e in state_end["ledger"] if e["gone_at"] is None]
    unmetered = sorted(i for i in creates if str(i) not in metered)
    ready_nodes = [n for n in nodes if n["ready"] is not None]
    booked = [b for b in bookings.values()]
    dues = [b["due"] for b in booked]
    all_ready = max((n["ready"] for n in ready_nodes), default=None)
    never_ready = [
        b
        for b, v in bookings.items()
        if not any(n["booking"] == b and n["ready"] is not None for n in nodes)
    ]
    # Ready too late is not ready: a node stranded in `checking` until the report timeout, or one
    # failed and replaced, leaves its booking failed here whatever happens after the deadline.
    deadline_s = args.boot + READY_DEADLINE_EXTRA_S
    first_ready = {}
    for n in nodes:
        if n["ready"] is not None:
            first_ready[n["booking"]] = min(
                n["ready"], first_ready.get(n["booking"], n["ready"])
            )
    not_ready_in_time = sorted(
        b
        for b, v in bookings.items()
        if b not in first_ready or first_ready[b] - v["due"] > deadline_s
    )
    # A node with a droplet that never became ready (its booking got a later one, or none).
    stranded = [
        {"node": n["id"], "booking": n["booking"], "status": n["status"]}
        for n in nodes
        if n["provider_id"] and n["ready"] is None
    ]
    hops = hop_values(
        bookings,
        nodes,
        creates,
        watcher.agent_started,
    )
    hop_stats = {key: percentiles(values) for key, values in hops.items()}
    ends = [b["ended"] for b in booked if b["ended"] is not None]
    destroyed = [n["destroyed"] for n in nodes if n["destroyed"] is not None]
    usage_missing = [
        n["id"] for n in nodes if n["provider_id"] and not n["usage_records"]
    ]
    failed_nodes = [
        {"node": n["id"], "reason": n["failure"]} for n in nodes if n["failure"]
    ]
    http_5xx = grep_count(logs["web"], r'" 5\d\d ')
    gave_up = grep_count(logs["worker"], r"raised unexpected|MaxRetriesExceeded")
    retries = grep_count(logs["worker"], r"Retry in ")
    peak = counters.get("peak_requests_per_minute", 0)
    run_s = times["done"] - times["start"]
    from_last = all_ready - max(dues) if all_ready and dues else None
    from_first = all_ready - min(dues) if all_ready and dues else None
    hop_p99 = {k: s.get("p99") for k, s in hop_stats.items() if k in dict(HOPS)}
    summary = {
        "config": {
            "bookings": args.bookings,
            "window_s": args.window,
            "end_window_s": args.end_window,
            "boot_s": settings.get("boot_delay_s", args.boot),
            "ip_delay_s": settings.get("ip_delay_s"),
            "emulator_rate_limit": {
                k: v for k, v in settings.items() if "rate" in k or "hour" in k
            },
            "web": f"gunicorn sync × {args.web_workers}",
            "celery": f"{args.celery_workers} worker(s), threads × 4, beat embedded in the first",
            "settings": args.set or "production defaults",
            "cpus": os.cpu_count(),
            "commit": git_commit(),
        },
        "bookings": {
            "created_201": sum(1 for m in made if m["status"] == 201),
            "refused": [m for m in made if m["status"] != 201],
            "became_ready": len(bookings) - len(never_ready),
            "never_ready": never_ready,
            "ready_deadline_s_after_start": deadline_s,
            # counted failed: not ready by start + boot + 120 s (never, stranded, or replaced)
            "failed": len(not_ready_in_time),
            "not_ready_in_time": not_ready_in_time,
            "final_status": count_by(b["status"] for b in booked),
            "cancel_answers": count_by(str(c["status"]) for c in cancels),
        },
        "time_to_all_ready_s": {
            "from_last_start": round(from_last, 1) if from_last is not None else None,
            "from_first_start": round(from_first, 1)
            if from_first is not None
            else None,
            "target_from_last_start": round(args.boot + READY_TARGET_EXTRA_S, 1),
            "met": from_last is not None
            and not never_ready
            and from_last <= args.boot + READY_TARGET_EXTRA_S,
            # the strict reading: the whole start window counts against the 60 s
            "met_from_first_start": from_first is not None
            and not never_ready
            and from_first <= args.boot + READY_TARGET_EXTRA_S,
        },
        "teardown_s": {
            "first_end_to_all_destroyed": round(max(destroyed) - min(ends), 1)
            if ends and destroyed
            else None,
            "last_end_to_all_destroyed": round(max(destroyed) - max(ends), 1)
            if ends and destroyed
            else None,
        },
        "provider": {
            "requests": counters.get("requests"),
            "peak_requests_per_minute": peak,
            "peak_requests_per_minute_sampled": requests_per_minute(watcher.requests),
            "requests_per_hour_projected": round(
                counters.get("requests", 0) * 3600 / run_s
            )
            if run_s
            else None,
            # the run is shorter than an hour: all of it counts against the 5,000/h quota
            "hourly_quota_used_pct": round(
                100 * counters.get("requests", 0) / DO_RATE_PER_HOUR, 1
            ),
            "by_route": counters.get("by_route"),
            "by_status": counters.get("by_status"),
            "rate_limited_429": counters.get("rate_limited"),
            "creates": counters.get("creates"),
            "deletes": counters.get("deletes"),
            "under_limit": peak < DO_RATE_PER_MIN,
        },
        "lost_work": {
            "failed_nodes": failed_nodes,
            "stranded_nodes": stranded,
            "tasks_given_up": gave_up,
            "task_retries": retries,
            "usage_missing_for_nodes": usage_missing,
            # I-8 once usage is per droplet: droplets of the provider's record without one
            "droplets_without_usage": unmetered,
            "api_5xx": http_5xx,
        },
        "duplicates": duplicates,
        "droplets_not_of_a_node": strangers,
        "orphans_after_teardown": [d["id"] for d in orphans],
        "hops_s": hop_stats,
        "agent_calls_in_api_s": agent_calls(logs["web"]),
        "hop_target_p99_s": HOP_TARGET_P99_S,
        "hops_met": all(
            v is not None and v <= HOP_TARGET_P99_S for v in hop_p99.values()
        ),
        # LabGPU's share of "active → bootstrap" is the API's answer to the bootstrap; the rest
        # is the agent starting, on this machine's shared cores (a real node has its own)
        "hops_met_with_api_share_for_bootstrap": all(
            v is not None and v <= HOP_TARGET_P99_S
            for v in {
                **hop_p99,
                "active_to_bootstrap": agent_calls(logs["web"])
                .get("bootstrap", {})
                .get("p99"),
            }.values()
        ),
        "machine": {
            "busy_pct": times.get("busy_pct"),
            "cpu_at_all_ready": times.get("cpu"),
            # 1-minute load average: the neighbours' work shows here before the storm starts
            "load_before": round(times["load_at_start"], 1),
            "load_at_all_ready": round(times.get("load_at_ready", 0), 1),
            "max_agents_running": watcher.max_agents,
            "min_mem_available_mb": watcher.min_mem_mb,
        },
        "run_s": round(run_s, 1),
    }
    summary["ok"] = (
        not never_ready
        and not not_ready_in_time
        and not stranded
        and peak < DO_RATE_PER_MIN
        and gave_up == 0
        and not summary["bookings"]["refused"]
        and summary["bookings"]["final_status"].get("completed", 0) == len(bookings)
        and duplicates == 0
        and not strangers
        and not orphans
        and not failed_nodes
        and not usage_missing
        and not unmetered
        and http_5xx == 0
    )
    return summary


def provider_record(
    state: dict, log_path: Path, sampled: dict[int, dict]
) -> dict[int, dict]:
    """Every droplet the emulator created, from its ledger: name, created, delete_requested, gone
    (epoch seconds); the activation from its log or, failing that, from the state samples (the
    planned `active_at`, reached on the emulator's next tick)."""
    logged = emulator_log_record(log_path)
    record = {}
    for entry in state["ledger"]:
        active = logged.get(entry["id"], {}).get("active")
        seen = sampled.get(entry["id"], {})
        if active is None and seen.get("status") == "active" and seen.get("active_at"):
            active = float(seen["active_at"])
        record[entry["id"]] = {
            "name": entry["name"],
            "created": entry["created_at"],
            "active": active,
            "delete_requested": entry["delete_requested_at"],
            "gone": entry["gone_at"],
        }
    return record


def count_by(values) -> dict:
    counts: dict = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def git_commit() -> str:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "backend", "bench"],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return out.stdout.strip() + (" + uncommitted changes" if dirty else "")


def print_table(s: dict) -> None:
    c, b, p, t, w = (
        s["config"],
        s["bookings"],
        s["provider"],
        s["time_to_all_ready_s"],
        s["lost_work"],
    )
    down, m = s["teardown_s"], s["machine"]
    rows = [
        ("backend", c["commit"]),
        ("setup", f"{c['web']}; {c['celery']}; {c['settings']}"),
        ("storm", (f"{c['bookings']} bookings starting within {c['window_s']} s, ended within "
                  f"{c['end_window_s']} s; emulated boot {c['boot_s']} s")),
        ("bookings", (f"{b['created_201']} created, {b['became_ready']} ready, {b['failed']} failed "
                     f"(not ready by start + {b['ready_deadline_s_after_start']:g} s), "
                     f"{len(w['stranded_nodes'])} stranded nodes, final {b['final_status']}")),
        ("time to all ready", (f"{t['from_last_start']} s after the last start "
                              f"({t['from_first_start']} s after the first); target ≤ "
                              f"{t['target_from_last_start']} s: {'met' if t['met'] else 'MISSED'}"
                              f" (from the first: {'met' if t['met_from_first_start'] else 'missed'})")),
        ("teardown", (f"{down['last_end_to_all_destroyed']} s from the last end to all destroyed "
                     f"({down['first_end_to_all_destroyed']} s from the first)")),
        ("provider requests", (f"{p['requests']} in {s['run_s']} s; peak "
                              f"{p['peak_requests_per_minute']}/min (sampled "
                              f"{p['peak_requests_per_minute_sampled']}); limit {DO_RATE_PER_MIN}"
                              f"/min: {'under' if p['under_limit'] else 'OVER'}; {p['hourly_quota_used_pct']} % of "
                              f"the {DO_RATE_PER_HOUR}/h quota")),
        ("  by route", json.dumps(p["by_route"])),
        ("  429s", (f"{p['rate_limited_429']}; task retries {w['task_retries']}, tasks given up "
                   f"{w['tasks_given_up']}, failed nodes {len(w['failed_nodes'])}")),
        ("duplicates", f"{s['duplicates']} (droplets per node attempt > 1, emulator's ledger)"),
        ("orphans after teardown", str(len(s["orphans_after_teardown"]))),
        ("usage missing", str(len(w["usage_missing_for_nodes"]))),
        ("API 5xx", str(w["api_5xx"])),
    ]  # fmt: skip
    orchestration = dict(HOPS)
    for key, label in HOPS + OTHER_SEGMENTS:
        h = s["hops_s"][key]
        mark = ""
        if key in orchestration:
            ok = h.get("p99") is not None and h["p99"] <= HOP_TARGET_P99_S
            mark = "  ok" if ok else f"  OVER {HOP_TARGET_P99_S:g} s"
        text = f"p50 {h.get('p50')} s, p99 {h.get('p99')} s, max {h.get('max')} s (n={h['n']})"
        rows.append((label, text + mark))
    for kind, calls in sorted(s["agent_calls_in_api_s"].items()):
        text = f"p50 {calls.get('p50')} s, p99 {calls.get('p99')} s (n={calls['n']})"
        rows.append(
            (
                f"agent {kind} in the API (web worker time)",
                f"{text} {calls['statuses']}",
            )
        )
    cpu = m.get("cpu_at_all_ready") or {}
    if cpu:
        each = cpu["agents_s"] / cpu["agents"] if cpu["agents"] else 0
        rows.append(
            (
                "CPU s until all ready",
                (
                    f"gunicorn {cpu['gunicorn_s']}, celery {cpu['celery_s']}, emulator "
                    f"{cpu['emulator_s']}, PostgreSQL {cpu['postgres_s']}, {cpu['agents']} agents "
                    f"{cpu['agents_s']} ({each:.2f} each)"
                ),
            )
        )
    rows.append(
        ("machine", (f"{m['busy_pct']} % busy of {c['cpus']} cores; ≤ {m['max_agents_running']} "
                    f"agents at once; ≥ {m['min_mem_available_mb']} MB memory free; load "
                    f"{m['load_before']} before, {m['load_at_all_ready']} at all ready"))
    )  # fmt: skip
    rows.append(("verdict", "ok" if s["ok"] else "FAILED (see JSON)"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


# --- main -----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    need_mb = args.bookings * AGENT_RSS_MB + 1024
    if mem_available_mb() < need_mb:
        sys.exit(
            f"{args.bookings} agents need about {need_mb} MB free; {mem_available_mb()} MB is"
        )
    tmp = Path(tempfile.mkdtemp(prefix="provision-storm-"))
    (tmp / "mail").mkdir()
    redis = emulator = web = None
    workers: list[Worker] = []
    database_url = ""
    logs = {"web": tmp / "gunicorn.log", "worker": tmp / "worker-0.log"}
    try:
        log(args, f"creating database {args.db}")
        database_url = storm.recreate_database(args)
        redis = RedisServer().start()
        port = storm.free_port()
        api = f"http://127.0.0.1:{port}"
        env = server_env(args, database_url, redis.url, api, tmp)
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=BACKEND, env=env, check=True,
        )  # fmt: skip
        emulator = start_emulator(
            tmp / "emulator",
            tokens=[EMULATOR_TOKEN],
            agent_cmd=str(VENV_BIN / "labgpu-agent"),
            boot_delay_s=args.boot,
            ip_delay_s=args.ip_delay,
            tick_s=0.1,
        )
        log(args, f"emulator on {emulator.url}: {emulator.state()['settings']}")
        out = subprocess.run(
            [sys.executable, str(BENCH / "provision_seed.py")],
            cwd=BACKEND,
            env={
                **env,
                "PSTORM_EMULATOR_URL": emulator.url,
                "PSTORM_BOOKINGS": str(args.bookings),
                "PSTORM_LABS": str(args.labs),
                "PSTORM_USERS_PER_LAB": str(args.users_per_lab),
            },
            check=True,
            capture_output=True,
            text=True,
        )
        seed = json.loads(out.stdout.strip().splitlines()[-1])
        log(
            args,
            f"starting gunicorn on {api} and {args.celery_workers} Celery worker(s)",
        )
        web_log = logs["web"].open("w")
        web = storm.start_gunicorn(
            args, {**env, "LABGPU_LOG_LEVEL": "WARNING"}, port, web_log,
            extra_args=("--access-logfile", "-", "--access-logformat", ACCESS_FORMAT),
        )  # fmt: skip
        storm.wait_ready(web, port, seed["tokens"][0])
        for index in range(args.celery_workers):
            path = tmp / f"worker-{index}.log"
            workers.append(Worker(env, path, beat=index == 0).start())
        # the storm starts once every worker consumes and the beat ticks, as on a running site
        for worker in workers:
            wait_for(
                lambda w=worker: " ready." in w.log_path.read_text(errors="replace"),
                timeout_s=180,
                message=f"Celery worker {worker.log_path.name} to be ready",
            )
        wait_for(
            lambda: "beat: Starting" in workers[0].log_path.read_text(errors="replace"),
            timeout_s=60,
            message="the beat to start",
        )
        times: dict = {"start": time.time(), "load_at_start": os.getloadavg()[0]}
        busy0, total0 = storm.cpu_times()
        with Watcher(emulator) as watcher:
            log(args, f"booking {args.bookings} nodes over {args.window} s")
            made = create_bookings(args, api, seed)
            times["booked"] = time.time()
            created = sum(1 for m in made if m["status"] == 201)
            log(args, f"{created} bookings created; waiting for them to be ready")
            wait_until(
                args, database_url,
                lambda b, n: b.get("scheduled", 0) + b.get("provisioning", 0) == 0,
                args.ready_timeout, "every booking ready or failed",
            )  # fmt: skip
            times["ready"] = time.time()
            times["cpu"] = cpu_snapshot(web, workers, emulator, watcher, database_url)
            times["load_at_ready"] = os.getloadavg()[0]
            time.sleep(args.hold)
            log(args, f"ending {created} bookings over {args.end_window} s")
            cancels = cancel_bookings(args, api, made)
            wait_until(
                args, database_url,
                lambda b, n: sum(v for k, v in b.items() if k not in DONE) == 0
                and sum(v for k, v in n.items() if k != "destroyed") == 0,
                args.teardown_timeout, "every booking over and every node destroyed",
            )  # fmt: skip
            times["done"] = time.time()
        busy1, total1 = storm.cpu_times()
        times["busy_pct"] = round(100.0 * (busy1 - busy0) / max(1, total1 - total0), 1)
        state_end = emulator.state()
        bookings, nodes, metered = read_record(database_url)
        creates = provider_record(state_end, emulator.log_file, watcher.droplets)
        summary = summarize(
            args, made=made, cancels=cancels, bookings=bookings, nodes=nodes, metered=metered,
            creates=creates,
            state_end=state_end, watcher=watcher, times=times, logs=logs,
        )  # fmt: skip
        if args.json:
            print(json.dumps(summary, indent=2))
        else:
            print_table(summary)
            print(json.dumps(summary))
        return 0 if summary["ok"] else 1
    finally:
        for worker in workers:
            worker.stop()
        if web is not None:
            storm.stop_gunicorn(web)
        if emulator is not None:
            emulator.close()
        if redis is not None:
            redis.stop()
        if args.keep_logs:
            dest = Path(args.keep_logs)
            dest.mkdir(parents=True, exist_ok=True)
            for path in [*tmp.glob("*.log"), *(tmp / "emulator").glob("*.log")]:
                shutil.copy(path, dest / path.name)
            for path in (tmp / "emulator" / "agents").glob("*/agent.log"):
                (dest / "agents").mkdir(exist_ok=True)
                shutil.copy(path, dest / "agents" / f"{path.parent.name}.log")
        if database_url and not args.keep_db:
            storm.drop_database(args)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    import machine  # commit, command, and what else loaded the machine

    with machine.watch():
        sys.exit(main())

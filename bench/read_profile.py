"""CPU per read request, in-process: what the calendar asks for one pool-month.

    .venv/bin/python bench/read_bench.py --bookings 10000 --keep-db     # leaves labgpu_read_bench
    cd backend && DATABASE_URL=postgres://postgres@127.0.0.1:5432/labgpu_read_bench \\
        ../.venv/bin/python ../bench/read_profile.py --n 300

Sends read_bench's GETs (busy, list page of 50, the compact whole month, availability; the next
calendar month, as the first bench user, a member of one lab) through Django's test client: the
full middleware stack, no sockets. Prints the CPU time of this process per request (Python, the driver, Django;
not the wait on PostgreSQL), which barely moves when other work loads the machine, unlike wall
time; with --profile, cProfile's top functions per endpoint counted in CPU time.

On a loaded machine even CPU time drifts (shared caches, hyperthreads); instructions do not.
Instructions per request of one endpoint: the difference of two runs under callgrind,

    for n in 10 60; do valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        ../.venv/bin/python ../bench/read_profile.py --endpoint busy --rounds 1 --n $n \
        2>&1 | grep refs; done        # (refs at 60 − refs at 10) / (50 × 1 round)
"""

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from datetime import UTC, datetime
from urllib.parse import urlencode

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver,127.0.0.1")
os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ.setdefault("LABGPU_THROTTLE_USER", "1000000/min")

import django

django.setup()

from django.test import Client
from labgpu.accounts.models import User
from labgpu.accounts.services import token_create
from labgpu.catalog.models import NodePool
from read_bench import month_window


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=300, help="measured requests per endpoint")
    p.add_argument(
        "--rounds", type=int, default=5, help="CPU ms is the median of this many"
    )
    p.add_argument(
        "--profile", action="store_true", help="cProfile (CPU timer) per endpoint"
    )
    p.add_argument("--top", type=int, default=25)
    p.add_argument(
        "--endpoint",
        choices=["busy", "list", "compact", "availability"],
        help="only this one",
    )
    args = p.parse_args()
    user = User.objects.filter(username__startswith="bench-").order_by("pk").first()
    assert user is not None, "no bench users: seed with bench/read_bench.py --keep-db"
    token = token_create(user=user, name="read-profile", scopes=["book"])[1]
    pool = NodePool.objects.filter(slug__startswith="bench-").order_by("pk").first()
    assert pool is not None
    start, end = month_window(datetime.now(UTC))
    window = {"start": start.isoformat(), "end": end.isoformat()}
    paths = {
        "busy": f"/api/v1/pools/{pool.pk}/busy/?{urlencode(window)}",
        "list": "/api/v1/bookings/?"
        + urlencode(
            {
                "pool": pool.pk,
                "start_after": window["start"],
                "end_before": window["end"],
            }
        ),
        "availability": f"/api/v1/pools/{pool.pk}/availability/?{urlencode(window)}",
    }
    # The whole pool-month, compact (issue 27 item 3).
    paths["compact"] = paths["list"].replace("/bookings/?", "/bookings/compact/?")
    if args.endpoint:
        paths = {args.endpoint: paths[args.endpoint]}
    client = Client(
        HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_ACCEPT="application/json"
    )

    def get(name: str) -> bytes:
        resp = client.get(paths[name])
        assert resp.status_code == 200, (
            paths[name],
            resp.status_code,
            resp.content[:300],
        )
        return resp.content

    for name in paths:  # warm caches, connections, the token's last use
        for _ in range(20):
            get(name)
    print(
        f"CPU ms per request, median of {args.rounds} rounds of {args.n} (in-process)"
    )
    print(
        f"  bench user {user.username}, pool {pool.pk}, {window['start']} … {window['end']}"
    )
    for name in paths:
        rounds = []
        for _ in range(args.rounds):
            cpu0 = time.process_time()
            for _ in range(args.n):
                get(name)
            rounds.append((time.process_time() - cpu0) / args.n * 1000)
        print(
            f"  {name:<13} {statistics.median(rounds):6.2f} ms  (min {min(rounds):.2f}; "
            f"{len(get(name))} bytes)"
        )
    if not args.profile:
        return
    for name in paths:
        prof = cProfile.Profile(time.process_time)
        prof.enable()
        for _ in range(args.n):
            get(name)
        prof.disable()
        out = io.StringIO()
        stats = pstats.Stats(prof, stream=out)
        print(
            f"--- {name}: {stats.total_tt / args.n * 1000:.2f} ms CPU/request with profiler ---"
        )
        stats.sort_stats("cumulative").print_stats(args.top)
        stats.sort_stats("tottime").print_stats(args.top)
        print(out.getvalue())


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    import machine  # commit, command, and what else loaded the machine

    with machine.watch():
        main()

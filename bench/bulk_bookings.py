"""Fill a benchmark database with N bookings fast (PostgreSQL COPY), as history and future work.

Used by bench/read_bench.py and bench/booking_storm.py (`--preseed`); on its own:

    .venv/bin/python bench/bulk_bookings.py postgres://postgres@127.0.0.1:5432/labgpu_bench \\
        --bookings 100000 --past-days 1500 --future-days 60

It reads the pools and memberships already in the database (bench/storm_seed.py makes them) and
writes straight into `bookings_booking`, so it works against any commit's schema that has the
columns below (text and boolean columns a later schema added as NOT NULL get "" and false). Layout: every slot of every pool is a lane; each lane gets an equal share of the
bookings, one per equal step of [now - past days, now + future days), each 30 min – 4 h on the
pool's grid, its reserved period (lead before, grace after) inside its step, so no two live
bookings of a pool ever share a slot at once (I-1 holds; the exclusion constraint checks it).
Ended bookings are `completed` and metered (consumed GPU-hours = booked hours × GPUs), later ones
`scheduled`, one that spans now and ~8 % of the rest `cancelled`. Lab and user: a random
membership. No quota rows are written: quotas are checked on create only.
"""

from __future__ import annotations

import argparse
import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import psycopg

GRID = timedelta(minutes=30)
MAX_LENGTH = timedelta(hours=4)
COLUMNS = (
    "created_at", "updated_at", "lab_id", "user_id", "pool_id", "start", "end", "purpose",
    "status", "status_changed_at", "on_demand", "slot", "reserved_start", "reserved_end",
    "gpu_count", "price_per_hour", "consumed_gpu_hours", "decision_reason", "ended_at",
    "failure_reason", "actual_cost",
)  # fmt: skip


def _floor(moment: datetime) -> datetime:
    epoch = int(moment.timestamp())
    return datetime.fromtimestamp(epoch - epoch % int(GRID.total_seconds()), UTC)


def _ceil(moment: datetime) -> datetime:
    floor = _floor(moment)
    return floor if floor == moment else floor + GRID


def seed_bookings(
    database_url: str,
    *,
    bookings: int,
    past_days: float,
    future_days: float,
    pool_ids: list[int] | None = None,
    seed: int = 1,
) -> dict:
    """Write `bookings` rows spread over the pools' slots; returns counts by status."""
    rng = random.Random(seed)
    moment = datetime.now(UTC).replace(microsecond=0)
    first, last = (
        moment - timedelta(days=past_days),
        moment + timedelta(days=future_days),
    )
    with psycopg.connect(database_url) as conn:
        pools = conn.execute(
            "SELECT p.id, p.capacity, p.provisioning_lead_minutes, p.teardown_grace_minutes,"
            " t.gpu_count, t.price_per_hour FROM catalog_nodepool p"
            " JOIN catalog_instancetype t ON t.id = p.instance_type_id"
            " WHERE p.id = ANY(%s) OR %s ORDER BY p.id",
            (pool_ids or [], pool_ids is None),
        ).fetchall()
        members = conn.execute(
            "SELECT lab_id, user_id FROM accounts_membership"
        ).fetchall()
        if not pools or not members:
            raise SystemExit(
                "bulk_bookings: no pools or no memberships in the database"
            )
        lanes = [(pool, slot) for pool in pools for slot in range(pool[1])]
        per_lane, extra = divmod(bookings, len(lanes))
        counts: dict[str, int] = {}
        # Columns a newer schema added as NOT NULL without a default (end_reason, jupyter…) get
        # what the ORM writes by default ("" or false); an older schema (a --ref tree) has none.
        added = conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_name = 'bookings_booking' AND table_schema = current_schema()"
            " AND is_nullable = 'NO' AND column_default IS NULL AND column_name <> 'id'"
            " AND column_name <> ALL(%s) ORDER BY ordinal_position",
            (list(COLUMNS),),
        ).fetchall()
        defaults = {"character varying": "", "text": "", "boolean": False}
        unknown = [name for name, kind in added if kind not in defaults]
        if unknown:
            raise SystemExit(
                f"bulk_bookings: give a value for the new columns {unknown}"
            )
        columns = ", ".join(
            f'"{name}"' for name in (*COLUMNS, *(name for name, _ in added))
        )
        blanks = tuple(defaults[kind] for _, kind in added)
        with (
            conn.cursor() as cur,
            cur.copy(f"COPY bookings_booking ({columns}) FROM STDIN") as copy,
        ):
            for index, ((pool_id, _, lead_m, grace_m, gpus, price), slot) in enumerate(
                lanes
            ):
                n = per_lane + (index < extra)
                if not n:
                    continue
                lead, grace = timedelta(minutes=lead_m), timedelta(minutes=grace_m)
                step = (last - first) / n
                if step < GRID * 2 + lead + grace:
                    raise SystemExit(
                        f"bulk_bookings: {n} bookings per slot do not fit in "
                        f"{past_days + future_days} days; give more days"
                    )
                for i in range(n):
                    start = _ceil(first + step * i + lead)
                    latest_end = _floor(first + step * (i + 1) - grace)
                    room = min(MAX_LENGTH, latest_end - start)
                    if room < GRID:
                        continue
                    end = start + GRID * rng.randint(1, room // GRID)
                    hours = Decimal((end - start).total_seconds()) / 3600
                    status = "completed" if end <= moment else "scheduled"
                    if start < moment < end or rng.random() < 0.08:
                        status = "cancelled"
                    lab_id, user_id = rng.choice(members)
                    created = min(start - timedelta(days=rng.randint(1, 30)), moment)
                    done = status == "completed"
                    copy.write_row((
                        created, created, lab_id, user_id, pool_id, start, end, "seeded",
                        status, end if done else created, False, slot, start - lead, end + grace,
                        gpus, price, (hours * gpus).quantize(Decimal("0.0001")) if done else None,
                        "", end if status != "scheduled" else None, "",
                        (hours * price).quantize(Decimal("0.01")) if done else None,
                        *blanks,
                    ))  # fmt: skip
                    counts[status] = counts.get(status, 0) + 1
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE bookings_booking")
    return counts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("database_url")
    p.add_argument("--bookings", type=int, required=True)
    p.add_argument("--past-days", type=float, default=365)
    p.add_argument("--future-days", type=float, default=60)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    print(
        seed_bookings(
            args.database_url,
            bookings=args.bookings,
            past_days=args.past_days,
            future_days=args.future_days,
            seed=args.seed,
        )
    )


if __name__ == "__main__":
    main()

"""The next free windows a full pool suggests (I-1): a window opens where a node frees up (a
reservation's end plus the provisioning lead, or a blackout's end) on the pool's grid, and must fit
the pool's capacity over [start - lead, end + grace) and miss every blackout.

Windows are computed from reservations read a batch at a time, each batch twice the one before up
to a most; each scenario runs with batches so small that every window needs several reads, with
batches that grow, and with one read for all."""

import random
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from labgpu.bookings import selectors
from labgpu.bookings.models import Booking
from labgpu.bookings.selectors import Usage, next_free_windows, peak_usage
from labgpu.catalog.models import Blackout
from labgpu.core.timeutils import now

pytestmark = pytest.mark.django_db

H = timedelta(hours=1)
M = timedelta(minutes=1)


@pytest.fixture(
    params=[(1, 1), (2, 2), (1, 4), (1000, 1000)], ids=["batch-1", "batch-2", "1-2-4", "one-read"]
)
def batch(request, monkeypatch):
    first, most = request.param
    monkeypatch.setattr(selectors, "FIRST_WINDOW_BATCH", first)
    monkeypatch.setattr(selectors, "WINDOW_BATCH", most)
    return most


def reserve(alice, pool, start, end, *, slot=0, status=Booking.Status.SCHEDULED):
    lead = timedelta(minutes=pool.provisioning_lead_minutes)
    grace = timedelta(minutes=pool.teardown_grace_minutes)
    return Booking.objects.create(
        user=alice,
        lab=alice.memberships.get().lab,
        pool=pool,
        start=start,
        end=end,
        status=status,
        slot=slot,
        reserved_start=start - lead,
        reserved_end=end + grace,
        gpu_count=1,
        price_per_hour=Decimal("1.99"),
    )


@pytest.fixture
def one_node(pool):
    """One node, 10 min lead, 5 min grace, 30-minute grid."""
    pool.capacity = 1
    pool.save(update_fields=["capacity"])
    return pool


def test_windows_open_after_lead_on_the_grid_and_skip_blackouts(alice, one_node, tomorrow, batch):
    t = tomorrow
    reserve(alice, one_node, t, t + 2 * H)
    reserve(alice, one_node, t + 3 * H, t + 4 * H)
    Blackout.objects.create(pool=one_node, start=t + 5 * H, end=t + 6 * H, reason="rack")
    reserve(alice, one_node, t + 7 * H, t + 8 * H)
    # Ignored: a cancelled booking, and a booking of another pool.
    reserve(alice, one_node, t + 8 * H, t + 12 * H, status=Booking.Status.CANCELLED)

    windows = next_free_windows(one_node, duration=H, after=t)

    # T+2h30 (after 2h + 5 min grace + 10 min lead, on the grid) runs into the 3h booking's lead;
    # T+4h30 into the blackout; the blackout's end T+6h into the 7h booking's lead; T+8h30 is free.
    assert windows == [(t + 8 * H + 30 * M, t + 9 * H + 30 * M)]


def test_a_short_window_fits_between_bookings(alice, one_node, tomorrow, batch):
    t = tomorrow
    reserve(alice, one_node, t, t + 2 * H)
    reserve(alice, one_node, t + 3 * H, t + 4 * H)

    windows = next_free_windows(one_node, duration=30 * M, after=t)

    # [2h30, 3h) would hold the node over [2h20, 3h05), into the 3h booking's lead from 2h50.
    assert windows == [(t + 4 * H + 30 * M, t + 5 * H)]
    assert next_free_windows(one_node, duration=30 * M, after=t + 30 * M) == windows


def test_windows_in_a_two_node_pool_count_overlaps(alice, pool, tomorrow, batch):
    t = tomorrow
    reserve(alice, pool, t, t + 4 * H, slot=0)
    reserve(alice, pool, t, t + 1 * H, slot=1)
    reserve(alice, pool, t + 2 * H, t + 3 * H, slot=1)
    reserve(alice, pool, t + 5 * H, t + 6 * H, slot=0)
    reserve(alice, pool, t + 5 * H, t + 9 * H, slot=1)

    windows = next_free_windows(pool, duration=H, after=t)

    # 1h30 meets the 4h booking and the 2h one's lead; 4h30 the two 5h bookings' lead.
    assert windows == [
        (t + 3 * H + 30 * M, t + 4 * H + 30 * M),
        (t + 6 * H + 30 * M, t + 7 * H + 30 * M),
        (t + 9 * H + 30 * M, t + 10 * H + 30 * M),
    ]


def test_the_booking_being_extended_does_not_block_its_own_windows(
    alice, one_node, tomorrow, batch
):
    t = tomorrow
    own = reserve(alice, one_node, t, t + 2 * H)
    reserve(alice, one_node, t + 3 * H, t + 4 * H)

    windows = next_free_windows(one_node, duration=30 * M, after=t + 2 * H, exclude_id=own.pk)

    assert windows[0] == (t + 2 * H, t + 2 * H + 30 * M)


def test_no_window_past_the_booking_horizon(one_node, batch):
    beyond = now() + timedelta(days=one_node.max_days_ahead, hours=1)
    assert next_free_windows(one_node, duration=H, after=beyond) == []


def test_a_full_pool_reads_its_next_windows_after_releasing_the_pool_lock(
    as_alice, pool, quotas, tomorrow
):
    body = {
        "pool": pool.pk,
        "start": tomorrow.isoformat(),
        "end": (tomorrow + 2 * H).isoformat(),
    }
    for _ in range(pool.capacity):
        assert as_alice.post("/api/v1/bookings/", body, format="json").status_code == 201

    with CaptureQueriesContext(connection) as ctx:
        response = as_alice.post("/api/v1/bookings/", body, format="json")

    assert response.status_code == 409 and response.json()["extra"]["next_free"]
    sqls = [query["sql"] for query in ctx.captured_queries]
    lock = next(i for i, sql in enumerate(sqls) if "FOR UPDATE" in sql)
    rolled_back = next(i for i, sql in enumerate(sqls) if sql.startswith("ROLLBACK"))
    windows = next(i for i, sql in enumerate(sqls) if "LIMIT" in sql and "catalog_blackout" in sql)
    assert lock < rolled_back < windows


def test_usage_steps_answer_as_the_sweep_does():
    """Usage.peak (the window search's) agrees with peak_usage on random half-open periods,
    touching ones included."""
    rng = random.Random(13)
    base = now().replace(microsecond=0)
    for _ in range(300):
        periods = []
        for _ in range(rng.randrange(0, 12)):
            start = base + rng.randrange(0, 40) * 15 * M
            periods.append((start, start + rng.randrange(1, 12) * 15 * M))
        usage = Usage(periods)
        for _ in range(10):
            start = base + rng.randrange(-4, 44) * 15 * M
            end = start + rng.randrange(1, 16) * 15 * M
            assert usage.peak(start, end) == peak_usage(periods, start, end), (periods, start, end)

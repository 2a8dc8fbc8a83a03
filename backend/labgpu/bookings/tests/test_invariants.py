"""Invariants I-1 (capacity), I-2 (quota), I-6 (isolation) and I-7 (time); see docs/architecture.md.

The race tests speak real HTTP to a live, multi-threaded server, so each request runs in its own
thread with its own database connection: the database, not Python, has to hold the line.
"""

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import pairwise

import httpx
import pytest

from labgpu.accounts.services import token_create
from labgpu.bookings.models import Booking
from labgpu.bookings.selectors import peak_usage
from labgpu.catalog.tests.factories import NodePoolFactory
from labgpu.quotas.models import Quota
from labgpu.quotas.selectors import quota_usage

PARALLEL = 32


def fire_in_parallel(url: str, tokens: list[str], bodies: list[dict]) -> list[httpx.Response]:
    """Send every body at once (a barrier releases them together), each on its own connection."""
    barrier = threading.Barrier(len(bodies))

    def send(index: int) -> httpx.Response:
        with httpx.Client(timeout=60) as client:
            barrier.wait()
            return client.post(
                url,
                json=bodies[index],
                headers={
                    "Authorization": f"Bearer {tokens[index % len(tokens)]}",
                    "Accept": "application/json",
                },
            )

    with ThreadPoolExecutor(max_workers=len(bodies)) as pool:
        return list(pool.map(send, range(len(bodies))))


def assert_capacity_held(pool) -> None:
    live = list(
        Booking.objects.filter(pool=pool, status__in=Booking.LIVE_STATUSES).values_list(
            "reserved_start", "reserved_end", "slot"
        )
    )
    periods = [(start, end) for start, end, _ in live]
    lo, hi = min(s for s, _ in periods), max(e for _, e in periods)
    assert peak_usage(periods, lo, hi) <= pool.capacity
    for slot in {slot for _, _, slot in live}:
        mine = sorted((s, e) for s, e, sl in live if sl == slot)
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in pairwise(mine))


@pytest.fixture
def tokens(alice, bob):
    return [token_create(user=user, name="race", scopes=["book"])[1] for user in (alice, bob)]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_I1_parallel_bookings_never_exceed_pool_capacity(
    live_server, tokens, instance_type, quotas, tomorrow
):
    pool = NodePoolFactory(instance_type=instance_type, capacity=3, max_days_ahead=60)
    body = {
        "pool": pool.pk,
        "start": tomorrow.isoformat(),
        "end": (tomorrow + timedelta(hours=2)).isoformat(),
    }
    responses = fire_in_parallel(f"{live_server.url}/api/v1/bookings/", tokens, [body] * PARALLEL)

    statuses = sorted(r.status_code for r in responses)
    assert statuses.count(201) == pool.capacity, statuses
    assert statuses.count(409) == PARALLEL - pool.capacity, statuses
    assert all(r.json()["code"] == "pool_full" for r in responses if r.status_code == 409)
    assert all(r.json()["extra"]["next_free"] for r in responses if r.status_code == 409)
    assert Booking.objects.filter(pool=pool).count() == pool.capacity
    assert_capacity_held(pool)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_I1_parallel_overlapping_bookings_of_mixed_lengths_hold_capacity(
    live_server, tokens, instance_type, quotas, tomorrow
):
    pool = NodePoolFactory(
        instance_type=instance_type,
        capacity=4,
        max_days_ahead=60,
        provisioning_lead_minutes=0,
        teardown_grace_minutes=0,
    )
    rng = random.Random(7)
    bodies = []
    for _ in range(PARALLEL):
        start = tomorrow + timedelta(minutes=30 * rng.randrange(0, 12))
        end = start + timedelta(minutes=30 * rng.randrange(1, 8))
        bodies.append({"pool": pool.pk, "start": start.isoformat(), "end": end.isoformat()})
    responses = fire_in_parallel(f"{live_server.url}/api/v1/bookings/", tokens, bodies)

    assert {r.status_code for r in responses} <= {201, 409}
    assert any(r.status_code == 201 for r in responses)
    assert_capacity_held(pool)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_I2_parallel_bookings_never_exceed_quota(
    live_server, tokens, instance_type, vision_lab, quotas, mid_next_month
):
    pool = NodePoolFactory(instance_type=instance_type, capacity=PARALLEL, max_days_ahead=90)
    month = mid_next_month.date().replace(day=1)
    Quota.objects.filter(lab=vision_lab, instance_type=instance_type, month=month).update(
        gpu_hours=Decimal(5)
    )
    bodies = []
    for index in range(PARALLEL):
        start = mid_next_month + timedelta(hours=index % 8)
        bodies.append(
            {
                "pool": pool.pk,
                "start": start.isoformat(),
                "end": (start + timedelta(hours=1)).isoformat(),
            }
        )
    responses = fire_in_parallel(f"{live_server.url}/api/v1/bookings/", tokens, bodies)

    statuses = [r.status_code for r in responses]
    assert statuses.count(201) == 5, statuses
    assert all(r.json()["code"] == "quota_exceeded" for r in responses if r.status_code == 409)
    usage = quota_usage(lab_id=vision_lab.pk, instance_type_id=instance_type.pk, month=month)
    assert usage.used + usage.committed <= Decimal(5)


# --- I-6 isolation ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_I6_other_labs_bookings_are_invisible_except_as_busy_capacity(
    as_alice, as_mallory, pool, quotas, tomorrow
):
    response = as_alice.post(
        "/api/v1/bookings/",
        {
            "pool": pool.pk,
            "start": tomorrow.isoformat(),
            "end": (tomorrow + timedelta(hours=2)).isoformat(),
            "purpose": "secret project",
        },
        format="json",
    )
    booking_id = response.json()["id"]

    assert as_mallory.get("/api/v1/bookings/").json()["count"] == 0
    assert as_mallory.get(f"/api/v1/bookings/{booking_id}/").status_code == 404
    assert as_mallory.post(f"/api/v1/bookings/{booking_id}/cancel/").status_code == 404
    busy = as_mallory.get(
        f"/api/v1/pools/{pool.pk}/busy/",
        {"start": tomorrow.isoformat(), "end": (tomorrow + timedelta(days=1)).isoformat()},
    ).json()
    assert busy == [
        {
            "start": busy[0]["start"],
            "end": busy[0]["end"],
            # The reserved period is capacity, not identity: calendars draw the changeover.
            "reserved_start": busy[0]["reserved_start"],
            "reserved_end": busy[0]["reserved_end"],
            "status": "scheduled",
            "mine": False,
            "booking": None,
            "lab": None,
            "series": None,  # which series a block belongs to: only for one's own labs
        }
    ]
    assert "secret" not in str(busy)
    mine = as_alice.get(
        f"/api/v1/pools/{pool.pk}/busy/",
        {"start": tomorrow.isoformat(), "end": (tomorrow + timedelta(days=1)).isoformat()},
    ).json()
    assert mine[0]["mine"] is True and mine[0]["booking"] == booking_id


@pytest.mark.django_db
def test_I6_researchers_cannot_decide_or_change_others_bookings(
    as_alice, as_bob, bob, as_mallory, quotas, instance_type, tomorrow
):
    approval_pool = NodePoolFactory(instance_type=instance_type, requires_approval=True)
    booking = as_bob.post(
        "/api/v1/bookings/",
        {
            "pool": approval_pool.pk,
            "start": tomorrow.isoformat(),
            "end": (tomorrow + timedelta(hours=1)).isoformat(),
        },
        format="json",
    ).json()
    assert (
        as_alice.post(f"/api/v1/bookings/{booking['id']}/approve/").json()["code"]
        == "not_lab_admin"
    )
    assert (
        as_alice.post(f"/api/v1/bookings/{booking['id']}/cancel/").json()["code"]
        == "not_your_booking"
    )
    assert as_mallory.post(f"/api/v1/bookings/{booking['id']}/approve/").status_code == 404


@pytest.mark.django_db
def test_I6_quotas_and_audit_are_scoped_to_own_labs(as_alice, as_mallory, as_bob, quotas):
    assert {q["lab"]["slug"] for q in as_alice.get("/api/v1/quotas/").json()["results"]} == {
        "vision"
    }
    assert {q["lab"]["slug"] for q in as_mallory.get("/api/v1/quotas/").json()["results"]} == {
        "language"
    }
    assert as_alice.get("/api/v1/audit/").json()["count"] == 0


# --- I-7 time -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_I7_naive_datetimes_are_rejected_and_offsets_are_stored_in_utc(
    as_alice, pool, quotas, tomorrow
):
    naive = as_alice.post(
        "/api/v1/bookings/",
        {
            "pool": pool.pk,
            "start": tomorrow.replace(tzinfo=None).isoformat(),
            "end": (tomorrow + timedelta(hours=1)).isoformat(),
        },
        format="json",
    )
    assert naive.status_code == 400 and naive.json()["code"] == "naive_datetime"

    shanghai = tomorrow.astimezone(__import__("zoneinfo").ZoneInfo("Asia/Shanghai"))
    response = as_alice.post(
        "/api/v1/bookings/",
        {
            "pool": pool.pk,
            "start": shanghai.isoformat(),
            "end": (shanghai + timedelta(hours=1)).isoformat(),
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["start"].endswith("Z")
    assert datetime.fromisoformat(response.json()["start"]) == tomorrow


@pytest.mark.django_db
def test_I7_weekly_limit_follows_the_members_time_zone_across_dst(alice, vision_lab, pool, quotas):
    """Europe/Berlin leaves summer time on 2027-10-31: that week has 169 hours, and a booking
    late on Sunday night local time belongs to that week, not the next one in UTC."""
    from zoneinfo import ZoneInfo

    from labgpu.bookings.services.rules import week_bounds as _week_bounds

    berlin = ZoneInfo("Europe/Berlin")
    week_start, week_end = _week_bounds(datetime(2027, 10, 31, 22, 30, tzinfo=berlin), berlin)
    assert week_start == datetime(2027, 10, 25, tzinfo=berlin)
    assert week_end == datetime(2027, 11, 1, tzinfo=berlin)
    assert week_end - week_start == timedelta(hours=169)  # UTC instants: real hours


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("monday", "hours", "refused_at"),
    [
        # Berlin's week of 2027-10-25 has 169 hours (summer time ends on the Sunday), that of
        # 2027-03-22 has 167 (it begins). A booking over the whole local week spends that many of
        # its hours, not 168.
        (datetime(2027, 10, 25), 169, 168),
        (datetime(2027, 3, 22), 167, 166),
    ],
)
def test_I7_weekly_limit_counts_a_dst_week_in_real_hours(
    alice, vision_lab, pool, monday, hours, refused_at
):
    from zoneinfo import ZoneInfo

    from labgpu.bookings.services.rules import check_member_limits
    from labgpu.bookings.services.snapshot import Ask, BookingSnapshot
    from labgpu.core.errors import Conflict

    berlin = ZoneInfo("Europe/Berlin")
    alice.timezone = "Europe/Berlin"
    membership = alice.memberships.get(lab=vision_lab)
    week_start = monday.replace(tzinfo=berlin).astimezone(UTC)
    week_end = (monday + timedelta(days=7)).replace(tzinfo=berlin).astimezone(UTC)
    assert week_end - week_start == timedelta(hours=hours)
    # An hour either side: the week's share is then bounded by the week itself.
    start, end = week_start - timedelta(hours=1), week_end + timedelta(hours=1)

    def judge(limit: int) -> None:
        membership.max_hours_per_week = limit
        ask = Ask(
            user=alice,
            lab=vision_lab,
            membership=membership,
            start=start,
            end=end,
            on_demand=False,
            moment=start - timedelta(days=1),
        )
        snap = BookingSnapshot(pool=pool, reserved=(start, end), blackouts=[], taken=[])
        check_member_limits(ask, snap)

    judge(hours)  # exactly the limit: allowed
    with pytest.raises(Conflict) as refused:
        judge(refused_at)
    assert refused.value.code == "member_hours_exceeded"
    # Named by her Monday, not by the UTC date that Monday's midnight falls on (a Sunday).
    assert f"in the week of {monday.date().isoformat()}" in str(refused.value)


@pytest.mark.django_db
def test_I7_availability_rejects_naive_query_times(as_alice, pool):
    response = as_alice.get(
        f"/api/v1/pools/{pool.pk}/availability/",
        {"start": "2030-01-01T00:00:00", "end": "2030-01-02T00:00:00+00:00"},
    )
    assert response.status_code == 400
    assert response.json()["code"] == "naive_datetime"


@pytest.mark.django_db
def test_I1_database_itself_refuses_two_live_bookings_in_one_slot(
    alice, vision_lab, pool, tomorrow
):
    """Bypass the services: PostgreSQL's exclusion constraint must still refuse the overlap."""
    from django.db import IntegrityError, transaction

    def insert(start, status=Booking.Status.SCHEDULED):
        return Booking.objects.create(
            lab=vision_lab,
            user=alice,
            pool=pool,
            start=start,
            end=start + timedelta(hours=1),
            reserved_start=start,
            reserved_end=start + timedelta(hours=1),
            slot=0,
            status=status,
            gpu_count=1,
            price_per_hour=1,
        )

    insert(tomorrow)
    insert(tomorrow, status=Booking.Status.CANCELLED)  # dead bookings hold nothing
    insert(tomorrow + timedelta(hours=1))  # touching, not overlapping
    with pytest.raises(IntegrityError), transaction.atomic():
        insert(tomorrow + timedelta(minutes=30))

"""How many SQL statements the hot endpoints cost, pinned (issue 13 item 5; as NetBox's baselines).

Each runs through the real HTTP API with a `book`-scoped API token, as scripts call it. A change
that adds a statement fails here: lower the number when you make a path leaner, and raise it only
with a reason written beside it. Statements, not time: the count is exact on every machine.
"""

from datetime import timedelta

import pytest

from conftest import client_for
from labgpu.accounts.models import ApiToken
from labgpu.accounts.tests.factories import MembershipFactory
from labgpu.bookings.models import Booking
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.factories import NodeFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(alice):
    client = client_for(alice, scopes=["book", "read"])
    # Token use is recorded at most once a minute; count the requests in between (the common case).
    ApiToken.objects.filter(user=alice).update(last_used_at=now())
    return client


def book(client, pool, start, hours=2):
    return client.post(
        "/api/v1/bookings/",
        {
            "pool": pool.pk,
            "start": start.isoformat(),
            "end": (start + timedelta(hours=hours)).isoformat(),
        },
        format="json",
    )


def test_booking_create(client, pool, quotas, tomorrow, django_assert_num_queries):
    # token; the member's labs; the pool locked (with whether the lab may book it); blackouts and
    # taken slots (one UNION); the quota row locked; the month's usage; INSERT booking; INSERT
    # audit entry = 8, + SAVEPOINT/RELEASE (the test's transaction; in production BEGIN/COMMIT,
    # which Django does not count).
    with django_assert_num_queries(10):
        response = book(client, pool, tomorrow)
    assert response.status_code == 201, response.content


def test_booking_create_against_a_budget(
    client, bob, vision_lab, pool, quotas, tomorrow, django_assert_num_queries
):
    from decimal import Decimal

    from labgpu.budgets.services import budget_create

    budget_create(actor=bob, lab=vision_lab, amount=Decimal(10_000))
    # The 10 above, + the pool's price in force (labgpu.pricing), + the lab's budgets locked, +
    # the month's spend = 13 (a lab without a budget pays none: `Lab.has_budget`, read with the
    # lab).
    with django_assert_num_queries(13):
        response = book(client, pool, tomorrow)
    assert response.status_code == 201, response.content


def test_booking_create_on_a_full_pool(client, pool, quotas, tomorrow, django_assert_num_queries):
    for _ in range(pool.capacity):
        assert book(client, pool, tomorrow).status_code == 201
    # The rush's common answer (409 pool_full with the next free windows): token; the member's
    # labs; the pool locked; blackouts and taken slots (one UNION); after the rollback (the pool
    # lock released), the next free windows' reservations and blackouts (one UNION) = 5,
    # + SAVEPOINT/ROLLBACK TO/RELEASE (the test's transaction; in production BEGIN/ROLLBACK).
    with django_assert_num_queries(8):
        response = book(client, pool, tomorrow)
    assert response.status_code == 409 and response.json()["code"] == "pool_full"


def test_booking_extend(client, pool, quotas, tomorrow, django_assert_num_queries):
    booking = book(client, pool, tomorrow).json()
    # token; visible labs; the booking and its nodes (the view's object); the pool locked; the
    # booking locked and re-read; the member's limits; blackouts + taken slots; the quota row
    # locked; its usage; UPDATE booking; INSERT audit = 12, + SAVEPOINT/RELEASE.
    with django_assert_num_queries(14):
        response = client.post(
            f"/api/v1/bookings/{booking['id']}/extend/",
            {"end": (tomorrow + timedelta(hours=3)).isoformat()},
            format="json",
        )
    assert response.status_code == 200, response.content


def test_booking_cancel(client, pool, quotas, tomorrow, django_assert_num_queries):
    booking = book(client, pool, tomorrow).json()
    # token; visible labs; the booking and its nodes; the pool's lock (a promotion walking the
    # waitlist must not see the slot freed midway); the compare-and-swap UPDATE and its audit
    # entry; re-read of what it wrote; the waitlist's promotion in the outbox (labgpu.waitlist:
    # published after commit, the backstop) and whether anyone waits (labgpu.waitlist promotes in
    # this transaction when someone does); the cancel's audit entry = 11, + SAVEPOINT/RELEASE.
    with django_assert_num_queries(13):
        response = client.post(f"/api/v1/bookings/{booking['id']}/cancel/", {}, format="json")
    assert response.status_code == 200, response.content


def test_booking_list_page_of_50(
    client, alice, vision_lab, pool, tomorrow, django_assert_num_queries
):
    for index in range(60):
        booking = BookingFactory(
            user=alice,
            lab=vision_lab,
            pool=pool,
            start=tomorrow + timedelta(hours=index),
            status=Booking.Status.READY if index < 10 else Booking.Status.SCHEDULED,
        )
        if index < 10:
            NodeFactory(booking=booking, attempt=1, status=Node.Status.FAILED)
            NodeFactory(booking=booking, attempt=2, status=Node.Status.READY)
    # token; visible labs; COUNT; the page (lab, user, pool joined); the nodes of its bookings
    # that can have one (one prefetch).
    with django_assert_num_queries(5):
        response = client.get("/api/v1/bookings/", {"page_size": 50})
    assert response.status_code == 200 and len(response.json()["results"]) == 50
    assert [row["node"]["attempt"] for row in response.json()["results"][:10]] == [2] * 10
    # A page of bookings still to start (a calendar's month) has no node to read.
    with django_assert_num_queries(4):
        response = client.get("/api/v1/bookings/", {"page_size": 50, "page": 2})
    assert response.status_code == 200 and len(response.json()["results"]) == 10


def test_booking_compact_pool_month(
    client, alice, bob, vision_lab, pool, tomorrow, django_assert_num_queries
):
    for index in range(60):
        booking = BookingFactory(
            user=alice if index % 2 else bob,
            lab=vision_lab,
            pool=pool,
            start=tomorrow + timedelta(hours=index),
            status=Booking.Status.READY if index < 10 else Booking.Status.SCHEDULED,
            series=None,
        )
        if index < 10:
            NodeFactory(booking=booking, attempt=1, status=Node.Status.READY)
    # token; the bookings with their labs and users, visibility in the same statement = 2,
    # however many bookings, labs and users the month holds.
    window = {
        "pool": pool.pk,
        "start_after": tomorrow.isoformat(),
        "end_before": (tomorrow + timedelta(days=31)).isoformat(),
    }
    with django_assert_num_queries(2):
        response = client.get("/api/v1/bookings/compact/", window)
    assert response.status_code == 200 and response.json()["count"] == 60
    with django_assert_num_queries(2):
        response = client.get("/api/v1/bookings/compact/", {**window, "status": ["ready"]})
    assert response.status_code == 200 and response.json()["count"] == 10


def test_pool_availability(client, pool, quotas, tomorrow, django_assert_num_queries):
    book(client, pool, tomorrow)
    # token; the pool if visible (one prepared statement, catalog.selectors.pool_visible_to);
    # reservations and blackouts for the intervals (one UNION); then the next free windows read
    # the live reservations and the blackouts in one UNION (a batch holds every reservation of
    # this pool) = 4.
    with django_assert_num_queries(4):
        response = client.get(
            f"/api/v1/pools/{pool.pk}/availability/",
            {
                "start": tomorrow.isoformat(),
                "end": (tomorrow + timedelta(days=7)).isoformat(),
                "duration_minutes": 60,
            },
        )
    assert response.status_code == 200, response.content


def test_pool_busy(client, pool, quotas, tomorrow, django_assert_num_queries):
    book(client, pool, tomorrow)
    # token; the pool if visible (pool_visible_to); the live bookings with whether each is of
    # the caller's labs (one statement, BUSY_SQL) = 3.
    with django_assert_num_queries(3):
        response = client.get(
            f"/api/v1/pools/{pool.pk}/busy/",
            {"start": tomorrow.isoformat(), "end": (tomorrow + timedelta(days=7)).isoformat()},
        )
    assert response.status_code == 200 and len(response.json()) == 1


def test_me(client, alice, other_lab, django_assert_num_queries):
    MembershipFactory(user=alice, lab=other_lab)
    # token; memberships with their labs (one query however many labs: 2 here).
    with django_assert_num_queries(2):
        response = client.get("/api/v1/me/")
    assert response.status_code == 200, response.content

"""The calendar's reads write their answers as plain dicts (issue 13 item 4: reads as fast as the
writes); each must say exactly what DRF's serializers say, which still document the answers.

The expected side is always DRF's own machinery (ModelSerializer.to_representation, a
DateTimeField, BusyBlockSerializer), never the lean code, so a field the lean code forgets, a
decimal written with other places or a moment in another format fails here.
"""

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer

from conftest import client_for
from labgpu.accounts.models import User
from labgpu.bookings.models import Booking
from labgpu.bookings.selectors import bookings_visible_to, nodes_load
from labgpu.bookings.serializers import (
    BookingSerializer,
    BusyBlockSerializer,
    booking_representation,
)
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.core.timeutils import iso
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.factories import NodeFactory

pytestmark = pytest.mark.django_db


def drf_booking(booking: Booking) -> dict:
    """What BookingSerializer answered before it wrote plain dicts: DRF field by field."""
    return serializers.ModelSerializer.to_representation(BookingSerializer(), booking)


def same_bytes(left: object, right: object) -> None:
    assert JSONRenderer().render(left) == JSONRenderer().render(right)


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2030, 1, 1, 10, tzinfo=UTC),
        datetime(2030, 1, 1, 10, 0, 0, 123456, tzinfo=UTC),
        datetime(2030, 1, 1, 10, 0, 0, 5, tzinfo=timezone(timedelta(0))),
        datetime(2030, 6, 30, 23, 59, 59, tzinfo=ZoneInfo("UTC")),
        datetime(2030, 1, 1, 18, 30, tzinfo=ZoneInfo("Asia/Shanghai")),
        datetime(2030, 1, 1, 2, 15, 7, 999, tzinfo=timezone(timedelta(hours=-9, minutes=-30))),
        datetime(2030, 1, 1, 10, 0, 0, 1),  # naive (a bug, I-7): read in the server's zone, UTC
    ],
)
def test_iso_writes_a_moment_as_drf_does(moment):
    assert iso(moment) == serializers.DateTimeField().to_representation(moment)


@pytest.fixture
def every_kind_of_booking(alice, bob, mallory, vision_lab, other_lab, pool, tomorrow):
    """A booking of every status; own, a labmate's and another lab's; with and without nodes,
    decisions, early ends, extensions waiting, costs, microseconds and non-ASCII text."""
    made = []
    for index, status in enumerate(Booking.Status.values):
        user, lab = [(alice, vision_lab), (bob, vision_lab), (mallory, other_lab)][index % 3]
        start = tomorrow + timedelta(hours=3 * index, microseconds=index * 1001)
        ended = status == Booking.Status.COMPLETED
        made.append(
            BookingFactory(
                user=user,
                lab=lab,
                pool=pool,
                start=start,
                end=start + timedelta(minutes=90),
                status=status,
                slot=index,
                gpu_count=1 + index % 4,
                price_per_hour=Decimal("1.9900") + index,
                purpose="训练 ResNet — «test» \u2028 ok" if index % 2 else "",
                on_demand=index % 4 == 1,
                pending_end=start + timedelta(hours=2) if index % 3 == 0 else None,
                decided_by=bob if index % 2 else None,
                decided_at=start - timedelta(days=1) if index % 2 else None,
                decision_reason="ok" if index % 2 else "",
                ended_by=alice if ended else None,
                ended_at=start + timedelta(minutes=30) if ended else None,
                consumed_gpu_hours=Decimal("0.5000") if index % 2 else None,
                actual_cost=Decimal("0.99") if index % 2 else None,
                failure_reason="no capacity" if status == Booking.Status.FAILED else "",
                status_changed_at=start - timedelta(hours=1) if index % 2 else None,
            )
        )
    nodeful = [b for b in made if b.status not in Booking.NODELESS_STATUSES]
    NodeFactory(booking=nodeful[0], attempt=1, status=Node.Status.FAILED, last_error="timeout")
    NodeFactory(booking=nodeful[0], attempt=2, status=Node.Status.READY)
    NodeFactory(booking=nodeful[1], attempt=1, status=Node.Status.BOOTING)
    return made


def test_lean_booking_answer_is_drfs_for_every_kind_of_booking(every_kind_of_booking, carol):
    bookings = list(bookings_visible_to(carol).filter(pk__in=[b.pk for b in every_kind_of_booking]))
    nodes_load(bookings)
    assert {b.status for b in bookings} == set(Booking.Status.values)
    assert sum(b.current_node is not None for b in bookings) == 2
    for booking in bookings:
        lean, drf = booking_representation(booking), drf_booking(booking)
        assert list(lean.items()) == list(drf.items())  # the same keys in the same order
        same_bytes(lean, drf)


def test_lean_booking_answer_of_a_booking_not_read_back(alice, vision_lab, pool, tomorrow):
    # As a service hands it over: values set in Python (an int price), not read from the database.
    booking = BookingFactory(
        user=alice, lab=vision_lab, pool=pool, start=tomorrow, price_per_hour=2
    )
    same_bytes(booking_representation(booking), drf_booking(booking))


def test_calendar_list_answers_drfs_bytes(every_kind_of_booking, alice, pool, tomorrow):
    response = client_for(alice).get(
        "/api/v1/bookings/",
        {
            "pool": pool.pk,
            "start_after": tomorrow.isoformat(),
            "end_before": (tomorrow + timedelta(days=3)).isoformat(),
        },
    )
    assert response.status_code == 200, response.content
    # Alice's lab's only (I-6), in start order, each as DRF writes it.
    expected = [b for b in every_kind_of_booking if b.lab_id == alice.memberships.get().lab_id]
    bookings = list(
        bookings_visible_to(alice).filter(pk__in=[b.pk for b in expected]).order_by("start", "id")
    )
    nodes_load(bookings)
    assert response.json()["count"] == len(bookings) > 0
    body = JSONRenderer().render(
        {"count": len(bookings), "next": None, "previous": None,
         "results": [drf_booking(b) for b in bookings]}
    )  # fmt: skip
    assert response.content == body


def test_busy_answers_drfs_bytes_own_labmates_and_anonymous(
    every_kind_of_booking, alice, pool, tomorrow
):
    response = client_for(alice).get(
        f"/api/v1/pools/{pool.pk}/busy/",
        {"start": tomorrow.isoformat(), "end": (tomorrow + timedelta(days=3)).isoformat()},
    )
    assert response.status_code == 200, response.content
    lab_ids = set(User.objects.get(pk=alice.pk).memberships.values_list("lab_id", flat=True))
    live = sorted(
        (b for b in every_kind_of_booking if b.status in Booking.LIVE_STATUSES),
        key=lambda b: (b.start, b.pk),
    )
    expected = [
        BusyBlockSerializer(
            {
                "start": b.start,
                "end": b.end,
                "reserved_start": b.reserved_start,
                "reserved_end": b.reserved_end,
                "status": b.status,
                "mine": b.user_id == alice.pk,
                "booking": b.pk if b.lab_id in lab_ids else None,
                "lab": {"id": b.lab.pk, "name": b.lab.name, "slug": b.lab.slug}
                if b.lab_id in lab_ids
                else None,
            }
        ).data
        for b in live
    ]
    assert {b["booking"] is None for b in expected} == {True, False}  # both kinds are there
    assert any(b["mine"] for b in expected) and not all(b["mine"] for b in expected)
    assert response.content == JSONRenderer().render(expected)


@pytest.mark.parametrize("endpoint", ["busy", "availability"])
def test_calendar_reads_still_take_the_catalogs_pool_filters(endpoint, alice, pool, tomorrow):
    client = client_for(alice)
    window = {"start": tomorrow.isoformat(), "end": (tomorrow + timedelta(days=1)).isoformat()}
    path = f"/api/v1/pools/{pool.pk}/{endpoint}/"
    assert client.get(path, window).status_code == 200
    assert client.get(path, {**window, "region": pool.region}).status_code == 200
    assert client.get(path, {**window, "region": "nowhere"}).status_code == 404
    assert not pool.requires_approval
    assert client.get(path, {**window, "requires_approval": "true"}).status_code == 404
    assert client.get(path, {**window, "requires_approval": "false"}).status_code == 200
    assert client.get(path, {**window, "instance_type": "x"}).status_code == 400


def test_list_reads_no_nodes_for_bookings_that_never_had_one(alice, vision_lab, pool, tomorrow):
    client = client_for(alice)
    for index in range(6):  # a month's bookings cancelled before their start: no node
        BookingFactory(
            user=alice,
            lab=vision_lab,
            pool=pool,
            start=tomorrow + timedelta(hours=index),
            status=Booking.Status.CANCELLED,
        )
    client.get("/api/v1/bookings/")  # the token's last use recorded
    with CaptureQueriesContext(connection) as without_nodes:
        response = client.get("/api/v1/bookings/")
    assert [r["node"] for r in response.json()["results"]] == [None] * 6
    read_nodes = 'SELECT "provisioning_node"'
    assert not [q for q in without_nodes.captured_queries if q["sql"].startswith(read_nodes)]
    # One cancelled while provisioning has its node: read, in one more query, and shown.
    cancelled = Booking.objects.filter(status=Booking.Status.CANCELLED).order_by("start").last()
    node = NodeFactory(booking=cancelled, attempt=1, status=Node.Status.DESTROYED)
    with CaptureQueriesContext(connection) as with_a_node:
        response = client.get("/api/v1/bookings/")
    nodes = [r["node"] and r["node"]["id"] for r in response.json()["results"]]
    assert nodes == [None] * 5 + [node.pk]
    assert len(with_a_node.captured_queries) == len(without_nodes.captured_queries) + 1


def test_list_filters_validate_each_request_on_their_own(alice, vision_lab, pool, tomorrow):
    # The filter form's class is built once (BookingFilter.get_form_class); no request's values
    # or errors may reach the next one.
    BookingFactory(user=alice, lab=vision_lab, pool=pool, start=tomorrow)
    client = client_for(alice)
    bad = client.get("/api/v1/bookings/", {"start_after": "yesterday", "status": "bogus"})
    assert bad.status_code == 400
    assert set(bad.json()["extra"]["fields"]) == {"start_after", "status"}
    assert client.get("/api/v1/bookings/").json()["count"] == 1
    late = client.get(
        "/api/v1/bookings/", {"start_after": (tomorrow + timedelta(days=1)).isoformat()}
    )
    assert late.status_code == 200 and late.json()["count"] == 0
    bad = client.get("/api/v1/bookings/", {"status": "bogus"})
    assert set(bad.json()["extra"]["fields"]) == {"status"}


def test_busy_shows_a_site_admin_every_labs_bookings(every_kind_of_booking, carol, pool, tomorrow):
    assert carol.is_site_admin and not carol.memberships.exists()
    response = client_for(carol).get(
        f"/api/v1/pools/{pool.pk}/busy/",
        {"start": tomorrow.isoformat(), "end": (tomorrow + timedelta(days=3)).isoformat()},
    )
    assert response.status_code == 200, response.content
    live = Booking.objects.filter(pool=pool, status__in=Booking.LIVE_STATUSES).order_by("start")
    assert [(b["booking"], b["lab"]["slug"]) for b in response.json()] == [
        (booking.pk, booking.lab.slug) for booking in live
    ]

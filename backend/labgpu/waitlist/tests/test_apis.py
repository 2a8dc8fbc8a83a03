"""The waitlist's HTTP contract: join a full window, see the place in line, take the offer; bad
input is a JSON error naming the field, in the reader's language."""

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from labgpu.bookings.models import Booking
from labgpu.bookings.services import booking_cancel, booking_create
from labgpu.catalog.tests.factories import NodePoolFactory
from labgpu.waitlist import services
from labgpu.waitlist.models import WaitlistEntry

pytestmark = pytest.mark.django_db


@pytest.fixture
def full_pool(instance_type, quotas, alice, tomorrow):
    pool = NodePoolFactory(instance_type=instance_type, capacity=1, max_days_ahead=60)
    booking, _ = booking_create(
        user=alice, pool=pool, start=tomorrow, end=tomorrow + timedelta(hours=2)
    )
    return pool, booking


def body(pool, tomorrow, change=None):
    return {
        "pool": pool.pk,
        "earliest_start": tomorrow.isoformat(),
        "latest_end": (tomorrow + timedelta(hours=2)).isoformat(),
        "duration_minutes": 120,
    } | (change or {})


def test_join_see_the_place_in_line_and_take_the_offer(full_pool, alice, as_bob, tomorrow):
    pool, booking = full_pool
    response = as_bob.post("/api/v1/waitlist/", body(pool, tomorrow), format="json")
    assert response.status_code == 201, response.content
    entry = response.json()
    assert (entry["status"], entry["position"], entry["offer"]) == ("waiting", 1, None)
    booking_cancel(actor=alice, booking=booking)
    services.waitlist_promote(pool_id=pool.pk)
    offered = as_bob.get(f"/api/v1/waitlist/{entry['id']}/").json()
    assert offered["status"] == "offered" and offered["position"] is None
    assert offered["offer"]["booking_status"] == "offered"
    assert offered["offer"]["start"] == tomorrow.isoformat().replace("+00:00", "Z")
    taken = as_bob.post(f"/api/v1/waitlist/{entry['id']}/accept/", {}, format="json")
    assert taken.status_code == 200, taken.content
    assert taken.json()["status"] == "booked"
    assert Booking.objects.get(pk=offered["booking"]).status == Booking.Status.SCHEDULED
    again = as_bob.post(f"/api/v1/waitlist/{entry['id']}/accept/", {}, format="json")
    assert (again.status_code, again.json()["code"]) == (409, "offer_closed")


def test_an_offered_booking_is_declined_through_the_waitlist_not_cancelled(
    full_pool, alice, bob, as_bob, tomorrow
):
    pool, booking = full_pool
    entry = services.waitlist_join(
        user=bob,
        pool=pool,
        earliest_start=tomorrow,
        latest_end=tomorrow + timedelta(hours=2),
        duration_minutes=120,
    )
    booking_cancel(actor=alice, booking=booking)
    services.waitlist_promote(pool_id=pool.pk)
    entry.refresh_from_db()
    response = as_bob.post(f"/api/v1/bookings/{entry.booking_id}/cancel/", {}, format="json")
    assert (response.status_code, response.json()["code"]) == (409, "invalid_status")
    declined = as_bob.post(f"/api/v1/waitlist/{entry.pk}/decline/", {}, format="json")
    assert declined.json()["status"] == "declined"
    assert Booking.objects.get(pk=entry.booking_id).status == Booking.Status.EXPIRED


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"earliest_start": "2030-01-01T10:00:00"}, "earliest_start"),  # naive
        ({"duration_minutes": 0}, "duration_minutes"),
        ({"duration_minutes": 240}, "duration_minutes"),
        ({"pool": None}, "pool"),
        ({"pool": 999999}, "pool"),
    ],
)
def test_bad_input_is_a_field_error(full_pool, as_bob, tomorrow, change, field):
    pool, _ = full_pool
    response = as_bob.post("/api/v1/waitlist/", body(pool, tomorrow, change), format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["extra"]["fields"], response.json()


def test_the_cap_is_a_conflict_in_the_readers_language(full_pool, bob, tomorrow, settings):
    pool, _ = full_pool
    as_bob = APIClient()
    as_bob.force_login(bob)
    settings.LABGPU_WAITLIST_MAX_PER_USER = 1
    bob.language = "zh-hans"
    bob.save(update_fields=["language"])
    assert as_bob.post("/api/v1/waitlist/", body(pool, tomorrow), format="json").status_code == 201
    response = as_bob.post("/api/v1/waitlist/", body(pool, tomorrow), format="json")
    assert response.status_code == 409
    error = response.json()
    assert error["code"] == "waitlist_user_cap" and error["extra"]["limit"] == 1
    assert "上限" in error["message"]


def test_others_see_no_entry_of_another_lab(full_pool, bob, as_mallory, tomorrow):
    pool, _ = full_pool
    entry = services.waitlist_join(
        user=bob,
        pool=pool,
        earliest_start=tomorrow,
        latest_end=tomorrow + timedelta(hours=2),
        duration_minutes=120,
    )
    assert as_mallory.get("/api/v1/waitlist/").json()["results"] == []
    assert as_mallory.get(f"/api/v1/waitlist/{entry.pk}/").status_code == 404
    assert WaitlistEntry.objects.get(pk=entry.pk).status == "waiting"

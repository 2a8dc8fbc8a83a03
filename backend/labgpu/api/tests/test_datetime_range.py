"""Issue 11 item 8: every datetime the API accepts lies in 2000-01-01 … 2100-01-01 (UTC).

`GET /pools/{id}/availability/?start=9999-12-31T23:45:00Z…` was a 500 (`ceil_to_grid` overflowed
datetime's year 9999). Bodies, query parameters and filters are bounded alike.
"""

import pytest

from conftest import client_for
from labgpu.bookings.models import Booking
from labgpu.catalog.models import Blackout
from labgpu.quotas.models import QuotaRequest

pytestmark = pytest.mark.django_db

FAR = [
    ("9999-12-31T23:45:00Z", "9999-12-31T23:59:00Z"),
    ("2100-01-01T00:15:00Z", "2100-01-01T01:00:00Z"),
    ("0001-01-01T00:00:00Z", "0001-01-01T01:00:00Z"),
    ("1999-12-31T23:00:00Z", "1999-12-31T23:30:00Z"),
]


def assert_out_of_range(response, field):
    assert response.status_code == 400, (response.status_code, response.content[:300])
    body = response.json()
    assert body["code"] in {"datetime_out_of_range", "date_out_of_range"}, body
    assert field in body["extra"]["fields"], body
    assert "2000-01-01" in body["message"] + str(body["extra"]) and "2100-01-01" in str(body)


@pytest.mark.parametrize(("start", "end"), FAR)
@pytest.mark.parametrize("action", ["availability", "busy"])
def test_pool_availability_far_outside_the_range_is_a_400(as_alice, pool, start, end, action):
    response = as_alice.get(f"/api/v1/pools/{pool.pk}/{action}/", {"start": start, "end": end})
    assert_out_of_range(response, "start")


@pytest.mark.parametrize(("start", "end"), FAR)
def test_booking_far_outside_the_range_is_a_400_on_both_paths(alice, pool, quotas, start, end):
    body = {"pool": pool.pk, "start": start, "end": end, "purpose": "far"}
    for client in (client_for(alice), client_for(alice, scopes=["book"])):  # session, token
        assert_out_of_range(client.post("/api/v1/bookings/", body, format="json"), "start")
    assert Booking.objects.count() == 0


def test_extend_beyond_the_range_is_a_400(alice, pool, quotas, tomorrow):
    from labgpu.bookings.tests.factories import BookingFactory

    booking = BookingFactory(lab=alice.memberships.get().lab, user=alice, pool=pool, start=tomorrow)
    response = client_for(alice).post(
        f"/api/v1/bookings/{booking.pk}/extend/", {"end": "9999-12-31T23:59:00Z"}, format="json"
    )
    assert_out_of_range(response, "end")


@pytest.mark.parametrize("parameter", ["start_after", "end_before"])
def test_booking_filters_outside_the_range_are_a_400(as_alice, parameter):
    response = as_alice.get("/api/v1/bookings/", {parameter: "9999-12-31T23:59:59Z"})
    assert_out_of_range(response, parameter)


def test_blackout_filters_and_bodies_outside_the_range_are_a_400(as_carol, pool):
    response = as_carol.get("/api/v1/blackouts/", {"start_before": "9999-12-31T23:59:59+00:00"})
    assert_out_of_range(response, "start_before")
    created = as_carol.post(
        "/api/v1/blackouts/",
        {"pool": pool.pk, "start": "9999-12-31T22:00:00Z", "end": "9999-12-31T23:00:00Z"},
        format="json",
    )
    assert_out_of_range(created, "start")
    assert Blackout.objects.count() == 0


def test_usage_range_outside_the_accepted_range_is_a_400(as_alice):
    response = as_alice.get(
        "/api/v1/usage/", {"start": "9999-12-01T00:00:00Z", "end": "9999-12-31T23:59:59Z"}
    )
    assert_out_of_range(response, "start")


def test_quota_month_outside_the_range_is_a_400(as_bob, as_carol, vision_lab, instance_type):
    body = {
        "lab": vision_lab.pk,
        "instance_type": instance_type.pk,
        "month": "9999-12-01",
        "gpu_hours": "10",
        "reason": "far",
    }
    assert_out_of_range(as_bob.post("/api/v1/quota-requests/", body, format="json"), "month")
    assert_out_of_range(as_carol.post("/api/v1/quotas/", body, format="json"), "month")
    assert QuotaRequest.objects.count() == 0


def test_times_inside_the_range_are_still_accepted(as_alice, pool):
    response = as_alice.get(
        f"/api/v1/pools/{pool.pk}/availability/",
        {"start": "2099-12-31T00:00:00Z", "end": "2099-12-31T23:00:00Z"},
    )
    assert response.status_code == 200, response.content


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ({"start": "9999-12-31T23:45:00Z", "end": "9999-12-31T23:59:00Z"}, "之间的时间"),
        ({"start": "2030-01-01T09:00:00", "end": "2030-01-01T10:00:00"}, "时区偏移"),
    ],
)
def test_time_field_errors_speak_the_readers_language(alice, pool, body, text):
    """The range and offset errors were plain English strings (never marked for translation)."""
    alice.language = "zh-hans"
    alice.save(update_fields=["language"])
    response = client_for(alice, scopes=["book"]).post(
        "/api/v1/bookings/", {"pool": pool.pk, **body}, format="json"
    )
    assert response.status_code == 400, response.content[:300]
    assert text in str(response.json()), response.json()

"""Issue 11 item 12: an unknown id and another lab's id read the same, and no error names a lab.

Before: `"You are not a member of Vision Lab."` (403) for another lab's id, 400 for an unknown one,
so an outsider could list which labs exist and what they are called. Same for feeds and quota
requests.
"""

from datetime import timedelta

import pytest

from conftest import client_for
from labgpu.bookings.models import Booking
from labgpu.catalog.tests.factories import NodePoolFactory
from labgpu.feeds.models import CalendarFeed
from labgpu.quotas.models import QuotaRequest

pytestmark = pytest.mark.django_db

UNKNOWN = 987_654_321


def same_answer(mine, unknown, *, mine_id, unknown_id, secret_names):
    """Same status, code, fields and message (up to the id the client itself sent)."""
    assert mine.status_code == unknown.status_code == 400, (mine.content, unknown.content)
    a, b = mine.json(), unknown.json()
    assert a["code"] == b["code"] == "does_not_exist"
    assert set(a["extra"].get("fields", {})) == set(b["extra"].get("fields", {}))
    assert a["message"].replace(str(mine_id), "ID") == b["message"].replace(str(unknown_id), "ID")
    assert str(a["extra"]).replace(str(mine_id), "ID") == str(b["extra"]).replace(
        str(unknown_id), "ID"
    )
    for name in secret_names:
        assert name not in mine.content.decode() and name not in unknown.content.decode()


def test_booking_for_another_lab_reads_like_an_unknown_lab_on_both_paths(
    mallory, vision_lab, other_lab, pool, quotas, tomorrow
):
    body = {
        "pool": pool.pk,
        "start": tomorrow.isoformat(),
        "end": (tomorrow + timedelta(hours=2)).isoformat(),
    }
    for client in (client_for(mallory), client_for(mallory, scopes=["book"])):
        theirs = client.post("/api/v1/bookings/", {**body, "lab": vision_lab.pk}, format="json")
        unknown = client.post("/api/v1/bookings/", {**body, "lab": UNKNOWN}, format="json")
        same_answer(
            theirs,
            unknown,
            mine_id=vision_lab.pk,
            unknown_id=UNKNOWN,
            secret_names=["Vision Lab", "vision"],
        )
        assert "lab" in theirs.json()["extra"]["fields"]
    assert Booking.objects.count() == 0


def test_booking_errors_never_name_a_lab_the_user_is_not_in(carol, vision_lab, pool, tomorrow):
    """A site admin may name any lab but books only for their own: still no name in the error."""
    response = client_for(carol).post(
        "/api/v1/bookings/",
        {
            "pool": pool.pk,
            "lab": vision_lab.pk,
            "start": tomorrow.isoformat(),
            "end": (tomorrow + timedelta(hours=2)).isoformat(),
        },
        format="json",
    )
    assert response.status_code == 403 and response.json()["code"] == "not_a_member"
    assert "Vision" not in response.content.decode()


def test_feed_of_another_labs_pool_reads_like_an_unknown_pool(as_mallory, vision_lab):
    closed = NodePoolFactory(name="Vision private", slug="vision-private")
    closed.allowed_labs.set([vision_lab])
    theirs = as_mallory.post("/api/v1/feeds/", {"kind": "pool", "pool": closed.pk}, format="json")
    unknown = as_mallory.post("/api/v1/feeds/", {"kind": "pool", "pool": UNKNOWN}, format="json")
    same_answer(
        theirs,
        unknown,
        mine_id=closed.pk,
        unknown_id=UNKNOWN,
        secret_names=["Vision private", "Vision Lab"],
    )
    assert CalendarFeed.objects.count() == 0


def test_quota_request_for_another_lab_reads_like_an_unknown_lab(as_bob, other_lab, instance_type):
    body = {
        "instance_type": instance_type.pk,
        "month": "2099-01-01",
        "gpu_hours": "10",
        "reason": "more",
    }
    theirs = as_bob.post("/api/v1/quota-requests/", {**body, "lab": other_lab.pk}, format="json")
    unknown = as_bob.post("/api/v1/quota-requests/", {**body, "lab": UNKNOWN}, format="json")
    same_answer(
        theirs,
        unknown,
        mine_id=other_lab.pk,
        unknown_id=UNKNOWN,
        secret_names=["Language Lab", "language"],
    )
    assert QuotaRequest.objects.count() == 0


def test_own_lab_still_books_and_requests(as_bob, bob, vision_lab, pool, quotas, tomorrow):
    booked = client_for(bob).post(
        "/api/v1/bookings/",
        {
            "pool": pool.pk,
            "lab": vision_lab.pk,
            "start": tomorrow.isoformat(),
            "end": (tomorrow + timedelta(hours=2)).isoformat(),
        },
        format="json",
    )
    assert booked.status_code == 201, booked.content
    asked = as_bob.post(
        "/api/v1/quota-requests/",
        {
            "lab": vision_lab.pk,
            "instance_type": pool.instance_type_id,
            "month": "2099-01-01",
            "gpu_hours": "10",
        },
        format="json",
    )
    assert asked.status_code == 201, asked.content

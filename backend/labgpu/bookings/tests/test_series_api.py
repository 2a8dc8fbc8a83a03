"""The series API's HTTP contract (issue 25): field errors, Idempotency-Key, the refusal answer,
and two series racing for one pool's capacity."""

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import httpx
import pytest
from rest_framework.test import APIClient

from labgpu.accounts.services import token_create
from labgpu.bookings.models import Booking, BookingSeries
from labgpu.bookings.recurrence import MAX_OCCURRENCES
from labgpu.bookings.tests.test_invariants import assert_capacity_held
from labgpu.bookings.tests.test_series import SHANGHAI, next_local, quota_months
from labgpu.catalog.tests.factories import NodePoolFactory


def body(pool, first, **more):
    return {
        "pool": pool.pk,
        "start": first.isoformat(),
        "end": (first + timedelta(hours=2)).isoformat(),
        "frequency": "weekly",
        "count": 3,
        **more,
    }


@pytest.mark.django_db
def test_create_lists_every_occurrence_and_the_series_reads_back(as_alice, pool, quotas):
    first = next_local(2, 10, SHANGHAI)
    response = as_alice.post("/api/v1/series/", body(pool, first), format="json")
    assert response.status_code == 201, response.content
    answer = response.json()
    assert [o["status"] for o in answer["occurrences"]] == ["scheduled"] * 3
    ids = [o["booking"] for o in answer["occurrences"]]
    assert sorted(ids) == sorted(
        Booking.objects.filter(series_id=answer["id"]).values_list("pk", flat=True)
    )
    assert answer["timezone"] == "Asia/Shanghai"  # alice's own zone by default
    booking = as_alice.get(f"/api/v1/bookings/{ids[0]}/").json()
    assert booking["series"] == answer["id"]
    again = as_alice.get(f"/api/v1/series/{answer['id']}/").json()
    assert [o["booking"] for o in again["occurrences"]] == ids


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "field", "code"),
    [
        ({"count": MAX_OCCURRENCES + 1}, "count", "max_value"),
        ({"count": None}, "count", "required"),
        ({"weekdays": ["XX"]}, "weekdays", "invalid_choice"),
        ({"frequency": "hourly"}, "frequency", "invalid_choice"),
        ({"timezone": "Mars/Olympus"}, "timezone", "invalid"),
        ({"count": None, "until": "2099-01-01", "frequency": "daily"}, "until", None),
        ({"start": "2030-01-01T09:00:00"}, "start", "naive_datetime"),
    ],
)
def test_bad_input_is_a_field_error_never_a_500(as_alice, pool, quotas, change, field, code):
    first = next_local(2, 10, SHANGHAI)
    response = as_alice.post("/api/v1/series/", {**body(pool, first), **change}, format="json")
    assert response.status_code == 400, response.content
    error = response.json()
    assert field in error["extra"]["fields"], error
    assert not BookingSeries.objects.exists() and not Booking.objects.exists()


@pytest.mark.django_db
def test_an_until_with_too_many_occurrences_says_the_limit(as_alice, pool, quotas):
    first = next_local(2, 10, SHANGHAI)
    response = as_alice.post(
        "/api/v1/series/",
        {**body(pool, first), "count": None, "until": "2099-01-01", "frequency": "daily"},
        format="json",
    )
    assert response.json()["code"] == "too_many_occurrences"
    assert response.json()["extra"]["limit"] == MAX_OCCURRENCES


@pytest.mark.django_db
def test_idempotency_key_replays_the_series(as_alice, pool, quotas):
    first = next_local(2, 10, SHANGHAI)
    headers = {"HTTP_IDEMPOTENCY_KEY": "weekly-run-1"}
    one = as_alice.post("/api/v1/series/", body(pool, first), format="json", **headers)
    two = as_alice.post("/api/v1/series/", body(pool, first), format="json", **headers)
    assert (one.status_code, two.status_code) == (201, 200)
    assert two["Idempotent-Replayed"] == "true" and two.json()["id"] == one.json()["id"]
    assert Booking.objects.count() == 3 and BookingSeries.objects.count() == 1
    other = as_alice.post("/api/v1/series/", body(pool, first, count=2), format="json", **headers)
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"


@pytest.mark.django_db
def test_all_or_nothing_refusal_lists_each_occurrence(as_alice, pool, quotas):
    first = next_local(2, 10, SHANGHAI)
    response = as_alice.post(
        "/api/v1/series/",
        body(pool, first, count=40, all_or_nothing=True),  # past the pool's 60 days ahead
        format="json",
    )
    assert response.status_code == 409, response.content
    error = response.json()
    assert error["code"] == "series_refused"
    codes = {o["code"] for o in error["extra"]["occurrences"] if o["status"] == "refused"}
    assert codes == {"too_far_ahead"}
    assert not Booking.objects.exists()


@pytest.mark.django_db
def test_mallory_cannot_see_or_cancel_alices_series(as_alice, as_mallory, pool, quotas):
    first = next_local(2, 10, SHANGHAI)
    created = as_alice.post("/api/v1/series/", body(pool, first), format="json").json()
    assert as_mallory.get(f"/api/v1/series/{created['id']}/").status_code == 404
    assert as_mallory.post(f"/api/v1/series/{created['id']}/cancel/", {}).status_code == 404
    assert Booking.objects.filter(status="scheduled").count() == 3


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_two_series_racing_for_capacity_never_overbook(
    live_server, alice, mallory, instance_type, vision_lab, other_lab
):
    """Each series is one transaction behind the pool lock; the database's exclusion constraint
    stands behind it. Several series of the same weekly times race for a pool of one node: every
    occurrence goes to exactly one of them."""
    pool = NodePoolFactory(instance_type=instance_type, capacity=1, max_days_ahead=60)
    first = next_local(2, 10, SHANGHAI)
    for lab in (vision_lab, other_lab):
        quota_months(lab, instance_type, first.date(), 3)
    tokens = [token_create(user=u, name="race", scopes=["book"])[1] for u in (alice, mallory)]
    racers = 6
    barrier = threading.Barrier(racers)

    def send(index: int) -> httpx.Response:
        with httpx.Client(timeout=60) as client:
            barrier.wait()
            return client.post(
                f"{live_server.url}/api/v1/series/",
                json=body(pool, first, count=4),
                headers={"Authorization": f"Bearer {tokens[index % 2]}"},
            )

    with ThreadPoolExecutor(max_workers=racers) as executor:
        responses = list(executor.map(send, range(racers)))
    statuses = sorted(r.status_code for r in responses)
    assert 500 not in statuses
    live = Booking.objects.filter(pool=pool, status__in=Booking.LIVE_STATUSES)
    assert live.count() == 4  # each weekly slot held once, by whichever series came first
    assert_capacity_held(pool)
    booked = sum(
        1
        for r in responses
        if r.status_code == 201
        for o in r.json()["occurrences"]
        if o["booking"]
    )
    assert booked == 4
    assert all(r.json()["code"] == "series_refused" for r in responses if r.status_code == 409)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "chinese"),
    [
        ({"count": None}, "请填写次数或截止日期：系列如何结束。"),
        ({"until": "2099-01-01"}, "次数和截止日期只能填写一个。"),
    ],
)
def test_how_a_series_ends_is_explained_in_the_readers_language(
    alice, pool, quotas, change, chinese
):
    alice.language = "zh-hans"
    alice.save(update_fields=["language"])
    client = APIClient()
    client.force_login(alice)
    first = next_local(2, 10, SHANGHAI)
    response = client.post("/api/v1/series/", {**body(pool, first), **change}, format="json")
    assert response.status_code == 400, response.content
    assert chinese in response.content.decode()


@pytest.mark.django_db
def test_a_series_books_every_occurrence_on_the_cost_centre_it_names(
    as_alice, pool, quotas, vision_lab, other_lab
):
    from labgpu.budgets.models import CostCentre

    mine = CostCentre.objects.create(lab=vision_lab, code="GRANT-7")
    stranger = CostCentre.objects.create(lab=other_lab, code="THEIRS")
    first = next_local(2, 10, SHANGHAI)
    refused = as_alice.post(
        "/api/v1/series/", body(pool, first, cost_centre=stranger.pk), format="json"
    )
    assert refused.status_code == 400 and "cost_centre" in refused.json()["extra"]["fields"]
    assert not BookingSeries.objects.exists() and not Booking.objects.exists()
    response = as_alice.post(
        "/api/v1/series/", body(pool, first, cost_centre=mine.pk), format="json"
    )
    assert response.status_code == 201, response.content
    centres = Booking.objects.filter(series_id=response.json()["id"]).values_list(
        "cost_centre_id", flat=True
    )
    assert list(centres) == [mine.pk] * 3

"""The booking express lane (bookings/express.py): same answers as the service, in one statement.

The rule-by-rule parity runs in test_booking_rules.py (every rule with a session and a token);
here: what only the lane can get wrong. PostgreSQL only: on SQLite every create takes the service.
"""

import json
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient

from conftest import client_for
from labgpu.accounts.models import ApiToken
from labgpu.accounts.services import hash_token, token_create
from labgpu.api.throttling import PrincipalRateThrottle
from labgpu.audit.models import AuditEvent
from labgpu.bookings import express
from labgpu.bookings.models import Booking, IdempotencyKey
from labgpu.bookings.serializers import BookingSerializer
from labgpu.catalog.tests.factories import NodePoolFactory
from labgpu.core.timeutils import now

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="the express lane is PostgreSQL's; on SQLite every create takes the service",
    ),
]
URL = "/api/v1/bookings/"


def body_for(pool, start, hours=2, **extra):
    return {
        "pool": pool.pk,
        "start": start.isoformat(),
        "end": (start + timedelta(hours=hours)).isoformat(),
        "purpose": "express",
        **extra,
    }


def express_calls(queries):
    return [q for q in queries if "labgpu_book_express" in q["sql"]]


def data_statements(queries):
    return [q for q in queries if "SAVEPOINT" not in q["sql"]]


def test_a_token_create_is_one_statement_and_answers_like_the_serializer(
    alice, pool, quotas, tomorrow
):
    client = client_for(alice, scopes=["book"])
    with CaptureQueriesContext(connection) as queries:
        response = client.post(
            URL, body_for(pool, tomorrow, purpose="  trimmed\u2028 ✓  "), format="json"
        )
    assert response.status_code == 201, response.content
    assert len(express_calls(queries.captured_queries)) == 1
    assert len(data_statements(queries.captured_queries)) == 1, queries.captured_queries

    booking = Booking.objects.get(pk=response.json()["id"])
    assert response.content == JSONRenderer().render(BookingSerializer(booking).data)
    assert response.headers["Location"] == f"/api/v1/bookings/{booking.pk}/"
    assert booking.purpose == "trimmed\u2028 ✓"
    assert b"\\u2028" in response.content  # escaped, as DRF's renderer does
    assert (booking.slot, booking.status, booking.on_demand) == (0, "scheduled", False)
    assert booking.reserved_start == tomorrow - timedelta(minutes=pool.provisioning_lead_minutes)
    assert booking.reserved_end == booking.end + timedelta(minutes=pool.teardown_grace_minutes)
    assert ApiToken.objects.get(user=alice).last_used_at is not None


def test_the_lane_writes_the_audit_entry_the_service_writes(
    alice, as_alice, pool, quotas, tomorrow
):
    token = client_for(alice, scopes=["book"])
    by_token = token.post(URL, body_for(pool, tomorrow), format="json").json()
    by_session = as_alice.post(URL, body_for(pool, tomorrow), format="json").json()
    events = {
        e.target_id: e
        for e in AuditEvent.objects.filter(action="booking.create", target_type="bookings.booking")
    }
    fast, slow = events[str(by_token["id"])], events[str(by_session["id"])]
    assert fast.data == slow.data
    assert (fast.actor_id, fast.lab_id) == (slow.actor_id, slow.lab_id)
    # Same period, same pool: the second booking got the next slot.
    assert by_token["start"] == by_session["start"]
    assert Booking.objects.get(pk=by_session["id"]).slot == 1


def test_pending_pools_and_on_demand_bookings_take_the_lane(alice, pool, quotas):
    client = client_for(alice, scopes=["book"])
    approval_pool = NodePoolFactory(instance_type=pool.instance_type, requires_approval=True)
    end = (now() + timedelta(hours=3)).replace(minute=0, second=0, microsecond=0)
    with CaptureQueriesContext(connection) as queries:
        response = client.post(
            URL, {"pool": approval_pool.pk, "end": end.isoformat()}, format="json"
        )
    assert response.status_code == 201, response.content
    assert len(data_statements(queries.captured_queries)) == 1
    body = response.json()
    assert (body["status"], body["on_demand"]) == ("pending", True)
    booking = Booking.objects.get(pk=body["id"])
    assert booking.reserved_start == booking.start  # no provisioning lead on demand


def test_what_the_lane_is_unsure_of_goes_to_the_service(alice, pool, quotas, tomorrow):
    """Each of these is deferred and still answered as DRF answers it."""
    client = client_for(alice, scopes=["book"])
    cases = [
        ({**body_for(pool, tomorrow), "pool": str(pool.pk)}, 201),  # DRF accepts "7"
        ({**body_for(pool, tomorrow), "extra": 1}, 201),  # unknown fields are ignored by DRF
        (body_for(pool, tomorrow, purpose="x" * 501), 400),
        ({**body_for(pool, tomorrow), "start": " " + tomorrow.isoformat()}, 400),
        (body_for(pool, tomorrow - timedelta(days=3)), 400),
    ]
    for body, status in cases:
        with CaptureQueriesContext(connection) as queries:
            response = client.post(URL, body, format="json")
        assert response.status_code == status, (body, response.content)
        if status == 201:  # booked by the service, not in the lane's single statement
            assert len(data_statements(queries.captured_queries)) > 1, body


def test_requests_drf_would_negotiate_differently_are_left_to_drf(alice, pool, quotas, tomorrow):
    client = client_for(alice, scopes=["book"])
    body = json.dumps(body_for(pool, tomorrow))
    long_type = "application/json; charset=utf-8; x=" + "a" * 300
    for path, headers, status in [
        (URL, {"HTTP_ACCEPT": "application/jsonl"}, 406),
        (URL + "?format=xml", {}, 404),
        (URL, {"content_type": long_type}, 415),
    ]:
        kwargs = {"content_type": "application/json", **headers}
        response = client.generic("POST", path, body, **kwargs)
        assert response.status_code == status, (path, headers, response.content)
    assert not Booking.objects.exists()


def test_a_scopes_value_that_is_not_a_list_books_nothing(alice, pool, quotas, tomorrow):
    token, raw = token_create(user=alice, name="odd", scopes=["book"])
    ApiToken.objects.filter(pk=token.pk).update(scopes="book")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.post(URL, body_for(pool, tomorrow), format="json").status_code == 403
    assert not Booking.objects.exists()


def test_without_its_function_the_lane_steps_aside(alice, pool, quotas, tomorrow, monkeypatch):
    monkeypatch.setattr(express, "BOOK", "SELECT labgpu_no_such_function()")
    client = client_for(alice, scopes=["book"])
    response = client.post(URL, body_for(pool, tomorrow), format="json")
    assert response.status_code == 201, response.content
    assert Booking.objects.count() == 1


def test_idempotent_retries_through_the_lane(alice, pool, quotas, tomorrow):
    client = client_for(alice, scopes=["book"])
    body = body_for(pool, tomorrow)
    first = client.post(URL, body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    again = client.post(URL, body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert IdempotencyKey.objects.get(key="k-1").booking_id == first.json()["id"]
    other = client.post(URL, {**body, "purpose": "else"}, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    assert Booking.objects.count() == 1


def test_tokens_the_lane_refuses_get_drfs_answers(alice, bob, pool, quotas, tomorrow):
    read_only = client_for(alice, scopes=["read"])
    assert read_only.post(URL, body_for(pool, tomorrow), format="json").status_code == 403
    token, raw = token_create(user=alice, name="old", scopes=["book"])
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=now())
    revoked = APIClient()
    revoked.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    response = revoked.post(URL, body_for(pool, tomorrow), format="json")
    assert response.status_code == 401 and response.json()["code"] == "authentication_failed"
    assert not Booking.objects.exists()


def test_a_request_is_counted_once_by_the_throttle(alice, pool, quotas, tomorrow, monkeypatch):
    cache.clear()
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "3/min", raising=False)
    client = client_for(alice, scopes=["book"])
    assert client.post(URL, body_for(pool, tomorrow), format="json").status_code == 201
    # Deferred to DRF (start in the past): still one request in the token's bucket, not two.
    past = body_for(pool, tomorrow - timedelta(days=3))
    assert client.post(URL, past, format="json").status_code == 400
    later = tomorrow + timedelta(hours=4)
    assert client.post(URL, body_for(pool, later), format="json").status_code == 201
    response = client.post(URL, body_for(pool, later + timedelta(hours=4)), format="json")
    assert response.status_code == 429 and response.json()["code"] == "throttled"
    # The token's bucket is shared with every other endpoint.
    assert client.get("/api/v1/me/").status_code == 429
    cache.clear()


def test_refused_tokens_use_up_no_throttle(alice, pool, quotas, tomorrow, monkeypatch):
    """DRF counts only authenticated, permitted requests; so does the lane."""
    cache.clear()
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "2/min", raising=False)
    token, raw = token_create(user=alice, name="reader", scopes=["read"])
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    for _ in range(3):
        assert reader.post(URL, body_for(pool, tomorrow), format="json").status_code == 403
    assert reader.get("/api/v1/me/").status_code == 200
    assert cache.get(PrincipalRateThrottle().key_for_token(token.secret_hash)) is not None
    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION="Bearer lgp_made-up")
    assert stranger.post(URL, body_for(pool, tomorrow), format="json").status_code == 401
    assert cache.get(PrincipalRateThrottle().key_for_token(hash_token("lgp_made-up"))) is None
    cache.clear()

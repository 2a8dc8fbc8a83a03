"""Every error has one JSON shape: {"message", "code", "extra"} — and no input causes a 500."""

import json
from datetime import timedelta

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from conftest import client_for
from labgpu.api.throttling import PrincipalRateThrottle

pytestmark = pytest.mark.django_db


def assert_shape(response, status, code=None):
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"message", "code", "extra"}, body
    assert isinstance(body["message"], str) and body["message"]
    if code:
        assert body["code"] == code
    return body


def test_400_names_the_field(as_alice, pool):
    body = assert_shape(
        as_alice.post("/api/v1/bookings/", {"pool": pool.pk, "end": "soon"}, format="json"), 400
    )
    assert "end" in body["extra"]["fields"]


def test_400_on_malformed_json(as_alice):
    response = as_alice.post("/api/v1/bookings/", "{not json", content_type="application/json")
    assert_shape(response, 400, "parse_error")


def test_401_when_not_signed_in(db):
    assert_shape(APIClient().get("/api/v1/bookings/"), 401, "not_authenticated")


def test_401_on_a_bogus_token(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer lgp_deadbeef_nope")
    assert_shape(client.get("/api/v1/me/"), 401, "authentication_failed")


def test_403_when_a_researcher_edits_the_catalog(as_alice, pool):
    assert_shape(
        as_alice.patch(f"/api/v1/pools/{pool.pk}/", {"capacity": 9}, format="json"),
        403,
        "permission_denied",
    )


def test_404_for_unknown_objects_and_urls(as_alice):
    assert_shape(as_alice.get("/api/v1/bookings/999999/"), 404, "not_found")
    assert_shape(as_alice.get("/api/v1/no-such-thing/"), 404, "not_found")


def test_405_for_wrong_methods(as_alice):
    assert_shape(as_alice.put("/api/v1/bookings/", {}, format="json"), 405, "method_not_allowed")


def test_409_carries_next_free_windows(as_alice, pool, quotas, tomorrow):
    body = {
        "pool": pool.pk,
        "start": tomorrow.isoformat(),
        "end": (tomorrow + timedelta(hours=1)).isoformat(),
    }
    for _ in range(pool.capacity):
        as_alice.post("/api/v1/bookings/", body, format="json")
    error = assert_shape(as_alice.post("/api/v1/bookings/", body, format="json"), 409, "pool_full")
    assert error["extra"]["next_free"]


def test_429_when_throttled(as_alice, monkeypatch):
    cache.clear()
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "2/min", raising=False)
    for _ in range(2):
        assert as_alice.get("/api/v1/me/").status_code == 200
    error = assert_shape(as_alice.get("/api/v1/me/"), 429, "throttled")
    assert error["extra"]["retry_after_s"] > 0
    cache.clear()


def test_500_is_json_and_leaks_nothing(as_alice, monkeypatch):
    from labgpu.accounts import apis

    def explode(self, request):
        raise RuntimeError("database password is hunter2")

    monkeypatch.setattr(apis.MeView, "get", explode)
    body = assert_shape(as_alice.get("/api/v1/me/"), 500, "server_error")
    assert "hunter2" not in body["message"]


@pytest.mark.parametrize(
    "payload",
    [
        {"pool": "x", "end": 5},
        {"pool": None, "end": None, "start": None},
        {"pool": [1], "end": {"a": 1}},
        {"pool": 1, "end": "2030-13-45T99:00:00+00:00"},
        {"pool": 1, "end": "2030-01-01T10:00:00+25:00"},
        {"pool": 1, "end": "9999-12-31T23:59:59+00:00", "purpose": "x" * 10_000},
        {"pool": 2**70, "end": "2030-01-01T10:00:00Z"},
    ],
)
def test_garbage_never_causes_a_500(as_alice, pool, payload):
    response = as_alice.post("/api/v1/bookings/", payload, format="json")
    assert 400 <= response.status_code < 500, response.content
    assert_shape(response, response.status_code)


@pytest.mark.parametrize(
    "query",
    [
        {"start": "yesterday", "end": "today"},
        {"start": "2030-01-01T00:00:00Z", "end": "2029-01-01T00:00:00Z"},
        {"start": "2030-01-01T00:00:00Z", "end": "2031-06-01T00:00:00Z"},
        {"start": "2030-01-01T00:00:00Z", "end": "2030-01-02T00:00:00Z", "duration_minutes": "-5"},
        {},
    ],
)
def test_bad_availability_queries_are_400(as_alice, pool, query):
    assert_shape(as_alice.get(f"/api/v1/pools/{pool.pk}/availability/", query), 400)


def test_filter_times_with_offsets_postgresql_refuses_are_not_a_500(as_alice, pool):
    # Python allows offsets up to ±23:59, PostgreSQL ±15:59 (found by schemathesis).
    response = as_alice.get("/api/v1/bookings/", {"end_before": "2030-10-22T00:39:12+20:44"})
    assert response.status_code == 200, response.content
    response = as_alice.get("/api/v1/blackouts/", {"end_after": "2030-01-01T00:00:00-23:00"})
    assert response.status_code == 200, response.content
    # Year 1 at +20:00 is before year 1 in UTC: no such moment.
    response = as_alice.get("/api/v1/bookings/", {"start_after": "0001-01-01T00:00:00+20:00"})
    assert_shape(response, 400, "invalid")


@pytest.mark.parametrize("scopes", [None, ["book"]])
def test_a_body_over_the_upload_limit_is_a_400(alice, scopes, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = json.dumps({"pool": 1, "end": "2030-01-01T00:00:00Z", "purpose": "x" * 2000})
    client = client_for(alice, scopes=scopes)
    response = client.generic("POST", "/api/v1/bookings/", body, content_type="application/json")
    assert assert_shape(response, 400, "request_too_large")["extra"]["limit_bytes"] == 1000


@pytest.mark.security
@pytest.mark.parametrize("value", ["-1.7976931348623157e308", "2.9e16", "1e400", "-4.5e-142"])
def test_booking_filter_ids_beyond_whole_bigint_numbers_are_400(as_alice, value):
    """Found by `make security` (schemathesis, negative input): `?user=-1.79e308` reached the
    database as an integer it cannot bind, a 500."""
    for name in ("user", "lab", "pool"):
        body = assert_shape(as_alice.get("/api/v1/bookings/", {name: value}), 400)
        assert name in body["extra"]["fields"]

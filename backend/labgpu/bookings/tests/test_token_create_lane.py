"""The booking create's token lane (apis.booking_create_by_token) answers exactly as BookingViewSet
does: each request is sent twice on the same rows, once through the lane and once with the lane
switched off (DRF's create), and the two answers — status, body, headers, the rows written — must
match. Requests the lane must leave to DRF are checked to reach DRF's serializer."""

import json
from datetime import timedelta

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from labgpu.accounts.services import token_create
from labgpu.audit.models import AuditEvent
from labgpu.bookings import apis
from labgpu.bookings.models import Booking, IdempotencyKey
from labgpu.bookings.serializers import BookingCreateSerializer
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.core.timeutils import ceil_to_grid, iso, now

pytestmark = pytest.mark.django_db
URL = "/api/v1/bookings/"
# Headers whose value differs from one request to the next whichever path answers.
PER_REQUEST = {"X-Request-ID", "Location"}
PER_ROW = {"id", "created_at", "updated_at", "status_changed_at"}


class SerializerCalls:
    """Counts BookingCreateSerializer.is_valid calls: DRF's create ran."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = BookingCreateSerializer.is_valid

        def counted(serializer, *args, **kwargs):  # type: ignore[no-untyped-def]
            self.count += 1
            return original(serializer, *args, **kwargs)

        monkeypatch.setattr(BookingCreateSerializer, "is_valid", counted)


def token_client(user, scopes=("book",)) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    _, raw = token_create(user=user, name="lane", scopes=list(scopes))
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def answer(client: APIClient, body: object, **headers: str) -> dict:
    """One POST, undone afterwards: what came back and what it wrote."""
    before = set(Booking.objects.values_list("pk", flat=True))
    audited_before = set(AuditEvent.objects.values_list("pk", flat=True))
    with transaction.atomic():
        response = client.post(URL, body, format="json", headers=headers)
        written = [
            (b.status, b.start, b.end, b.purpose, b.slot, b.lab_id, b.cost_centre_id, b.jupyter)
            for b in Booking.objects.exclude(pk__in=before).order_by("pk")
        ]
        audited = AuditEvent.objects.exclude(pk__in=audited_before)
        keys = IdempotencyKey.objects.count()
        audit = sorted(audited.values_list("action", flat=True))
        transaction.set_rollback(True)
    data = response.json()
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in PER_ROW}
    return {
        "status": response.status_code,
        "body": data,
        "headers": {k: v for k, v in response.headers.items() if k not in PER_REQUEST},
        "location": "Location" in response.headers,
        "rows": written,
        "audit": audit,
        "keys": keys,
    }


def both(client: APIClient, body: object, monkeypatch: pytest.MonkeyPatch, **headers: str):
    """(lane's answer, DRF's answer) for the same request on the same rows."""
    calls = SerializerCalls(monkeypatch)
    lane = answer(client, body, **headers)
    assert calls.count == 0, "the token lane did not answer this request"
    with monkeypatch.context() as off:
        off.setattr(apis, "booking_create_by_token", lambda request: None)
        drf = answer(client, body, **headers)
    assert calls.count == 1, "DRF's create did not answer this request"
    return lane, drf


@pytest.fixture
def window(tomorrow):
    return {"start": iso(tomorrow), "end": iso(tomorrow + timedelta(hours=2))}


def test_a_plain_create_is_answered_alike(alice, pool, quotas, window, monkeypatch):
    lane, drf = both(
        token_client(alice),
        {"pool": pool.pk, **window, "purpose": "  fine-tune  ", "jupyter": True, "lab": None},
        monkeypatch,
    )
    assert lane["status"] == 201
    assert lane["rows"] and lane["rows"][0][3] == "fine-tune"  # trimmed, as CharField trims
    assert lane["audit"]  # its audit entry, in the same transaction
    assert lane == drf


def test_an_on_demand_create_is_answered_alike(alice, pool, quotas, monkeypatch):
    end = iso(ceil_to_grid(now() + timedelta(hours=2), 60))
    lane, drf = both(token_client(alice), {"pool": pool.pk, "start": None, "end": end}, monkeypatch)
    assert lane["status"] == 201
    # The start is the server's "now" on each side: equal to the minute, not to the microsecond.
    for side in (lane, drf):
        side["body"].pop("start"), side["body"].pop("reserved_start", None)
        side["rows"] = [row[:1] + row[2:] for row in side["rows"]]
    assert lane == drf


def test_refusals_are_answered_alike_in_the_users_language(
    alice, pool, quotas, window, monkeypatch
):
    alice.language = "zh-hans"
    alice.save(update_fields=["language"])
    client = token_client(alice)
    past = now() - timedelta(days=1)
    for body in (
        {"pool": pool.pk, "start": iso(past), "end": iso(past + timedelta(hours=1))},
        {"pool": 987654321, **window},
        {"pool": pool.pk, "start": window["end"], "end": window["start"]},
        {"pool": pool.pk, **window, "cost_centre": 987654321},
    ):
        lane, drf = both(client, body, monkeypatch)
        assert lane["status"] >= 400 and not lane["rows"]
        assert lane["headers"]["Content-Language"] == "zh-hans"
        assert lane == drf, body


def test_a_full_pool_is_answered_alike_with_its_next_windows(
    alice, bob, pool, quotas, tomorrow, window, monkeypatch
):
    for slot in range(pool.capacity):
        BookingFactory(
            pool=pool,
            user=bob,
            lab=bob.memberships.first().lab,
            start=tomorrow,
            end=tomorrow + timedelta(hours=2),
            slot=slot,
        )
    lane, drf = both(token_client(alice), {"pool": pool.pk, **window}, monkeypatch)
    assert lane["status"] == 409 and lane["body"]["code"] == "pool_full"
    assert lane == drf


def test_an_idempotent_retry_is_answered_alike(alice, pool, quotas, window, monkeypatch):
    client = token_client(alice)
    body = {"pool": pool.pk, **window}
    client.post(URL, body, format="json", headers={"Idempotency-Key": "retry-1"})
    lane, drf = both(client, body, monkeypatch, **{"Idempotency-Key": "retry-1"})
    assert lane["status"] == 200 and lane["headers"]["Idempotent-Replayed"] == "true"
    assert lane == drf
    # The same key with another body: refused alike.
    other = {"pool": pool.pk, **window, "purpose": "other"}
    lane, drf = both(client, other, monkeypatch, **{"Idempotency-Key": "retry-1"})
    assert lane["status"] >= 400
    assert lane == drf


@pytest.mark.parametrize(
    ("change", "how"),
    [
        (lambda pool, lab: {"pool": str(pool.pk)}, "the pool as a string: IntegerField reads it"),
        (lambda pool, lab: {"jupyter": "true"}, "a boolean as a string"),
        (lambda pool, lab: {"lab": lab.pk}, "a lab id: whether the caller sees it is checked"),
        (lambda pool, lab: {"purpose": 42}, "a number as the purpose"),
        (lambda pool, lab: {"purpose": "x" * 501}, "a purpose over its length"),
        (lambda pool, lab: {"end": "2030-01-01T10:00:00"}, "a naive end"),
        (lambda pool, lab: {"pool": True}, "a boolean as the pool"),
        (lambda pool, lab: {"cost_centre": "1"}, "a cost centre as a string"),
    ],
)
def test_what_only_the_serializer_can_read_goes_to_drf(
    alice, pool, quotas, window, vision_lab, monkeypatch, change, how
):
    calls = SerializerCalls(monkeypatch)
    body = {"pool": pool.pk, **window, **change(pool, vision_lab)}
    token_client(alice).post(URL, body, format="json")
    assert calls.count == 1, how


def test_sessions_and_other_tokens_go_to_drf(alice, pool, quotas, window, monkeypatch):
    calls = SerializerCalls(monkeypatch)
    session = APIClient()
    session.force_login(alice)
    assert session.post(URL, {"pool": pool.pk, **window}, format="json").status_code == 201
    assert calls.count == 1
    # A read-only token is refused by DRF's permission before any serializer runs.
    reader = token_client(alice, scopes=("read",))
    assert reader.post(URL, {"pool": pool.pk, **window}, format="json").status_code == 403
    unknown = APIClient()
    unknown.credentials(HTTP_AUTHORIZATION="Bearer lgp_not_a_token")
    assert unknown.post(URL, {"pool": pool.pk, **window}, format="json").status_code == 401
    assert calls.count == 1


def test_hostile_bodies_get_drfs_refusals_and_write_nothing(alice, pool, quotas, window):
    client = token_client(alice)
    nested: object = "x"
    for _ in range(40):
        nested = [nested]
    bodies = {
        "too_deeply_nested": json.dumps({"pool": pool.pk, **window, "x": nested}),
        "number_out_of_range": f'{{"pool": {pool.pk}, "end": "{window["end"]}", "purpose": NaN}}',
        "parse_error": '{"pool": 1, "end": ',
        # Over the lane's 16 KB: DRF reads it and refuses the purpose's length.
        "max_length": json.dumps({"pool": pool.pk, **window, "purpose": "x" * 20_000}),
    }
    for code, body in bodies.items():
        response = client.generic("POST", URL, body, content_type="application/json")
        assert response.status_code == 400, (code, response.content)
        assert response.json()["code"] == code
    assert not Booking.objects.exists()

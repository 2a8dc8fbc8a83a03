"""Session login with CSRF for the SPA; hashed, scoped, expiring personal tokens for scripts."""

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from conftest import client_for
from labgpu.accounts.models import ApiToken
from labgpu.accounts.services import hash_token, token_authenticate, token_create
from labgpu.core.timeutils import now

pytestmark = pytest.mark.django_db


def test_session_login_needs_csrf_and_returns_me(alice):
    client = APIClient(enforce_csrf_checks=True)
    client.get("/api/v1/auth/csrf/")
    csrf = client.cookies["csrftoken"].value
    refused = client.post(
        "/api/v1/auth/login/", {"username": "alice", "password": "correct horse battery staple"}
    )
    assert refused.status_code == 403 and refused.json()["code"] == "csrf_failed"
    response = client.post(
        "/api/v1/auth/login/",
        {"username": "alice", "password": "correct horse battery staple"},
        HTTP_X_CSRFTOKEN=csrf,
    )
    assert response.status_code == 200, response.content
    assert response.json()["username"] == "alice"
    assert response.json()["memberships"][0]["lab"]["slug"] == "vision"
    me = client.get("/api/v1/me/")
    assert me.json()["timezone"] == "Asia/Shanghai"
    client.post("/api/v1/auth/logout/", HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value)
    assert client.get("/api/v1/me/").status_code == 401


def test_wrong_password_is_a_clear_401(alice):
    response = APIClient().post("/api/v1/auth/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 401
    assert response.json()["code"] == "invalid_credentials"


def test_token_is_shown_once_and_stored_hashed(as_alice, alice):
    response = as_alice.post(
        "/api/v1/tokens/", {"name": "laptop", "scopes": ["read"]}, format="json"
    )
    assert response.status_code == 201
    raw = response.json()["token"]
    stored = ApiToken.objects.get(pk=response.json()["id"])
    assert stored.secret_hash == hash_token(raw) and raw not in str(stored.__dict__)
    listed = as_alice.get("/api/v1/tokens/").json()
    assert listed[0]["name"] == "laptop" and "token" not in listed[0]


def test_bearer_token_authenticates_and_revocation_stops_it(alice):
    token, raw = token_create(user=alice, name="script", scopes=["read"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/v1/me/").json()["username"] == "alice"
    client_for(alice).delete(f"/api/v1/tokens/{token.pk}/")
    response = client.get("/api/v1/me/")
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"


def test_expired_token_is_refused(alice):
    token, raw = token_create(
        user=alice, name="old", scopes=["read"], expires_at=now() + timedelta(minutes=1)
    )
    ApiToken.objects.filter(pk=token.pk).update(expires_at=now() - timedelta(seconds=1))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/v1/me/").status_code == 401


def test_read_scope_cannot_book_and_book_scope_can(alice, pool, quotas, tomorrow):
    body = {
        "pool": pool.pk,
        "start": tomorrow.isoformat(),
        "end": (tomorrow + timedelta(hours=1)).isoformat(),
    }
    reader = client_for(alice, scopes=["read"])
    assert reader.get("/api/v1/bookings/").status_code == 200
    refused = reader.post("/api/v1/bookings/", body, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    booker = client_for(alice, scopes=["book"])
    assert booker.post("/api/v1/bookings/", body, format="json").status_code == 201


def test_book_scope_cannot_administer(bob, pool, quotas):
    booker = client_for(bob, scopes=["book"])
    response = booker.post("/api/v1/labs/1/members/", {"username": "x"}, format="json")
    assert response.status_code == 403


def test_tokens_cannot_mint_tokens(alice):
    client = client_for(alice, scopes=["admin"])
    response = client.post("/api/v1/tokens/", {"name": "more", "scopes": ["read"]}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "session_required"


def test_idempotency_key_returns_the_original_booking(alice, pool, quotas, tomorrow):
    client = client_for(alice, scopes=["book"])
    body = {
        "pool": pool.pk,
        "start": tomorrow.isoformat(),
        "end": (tomorrow + timedelta(hours=1)).isoformat(),
        "purpose": "retry me",
    }
    first = client.post("/api/v1/bookings/", body, format="json", HTTP_IDEMPOTENCY_KEY="abc-1")
    again = client.post("/api/v1/bookings/", body, format="json", HTTP_IDEMPOTENCY_KEY="abc-1")
    assert first.status_code == 201 and again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert alice.bookings.count() == 1
    changed = client.post(
        "/api/v1/bookings/",
        {**body, "purpose": "other"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="abc-1",
    )
    assert changed.status_code == 422 and changed.json()["code"] == "idempotency_key_reused"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_parallel_retries_with_one_idempotency_key_make_one_booking(
    live_server, alice, pool, quotas, tomorrow
):
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from labgpu.bookings.models import IdempotencyKey

    RETRIES = 20  # issue 13 item 8: idempotency under 20 parallel retries

    _, raw = token_create(user=alice, name="retry", scopes=["book"])
    body = {
        "pool": pool.pk,
        "start": tomorrow.isoformat(),
        "end": (tomorrow + timedelta(hours=1)).isoformat(),
    }
    barrier = threading.Barrier(RETRIES)

    def send(_):
        with httpx.Client(timeout=60) as client:
            barrier.wait()
            return client.post(
                f"{live_server.url}/api/v1/bookings/",
                json=body,
                headers={"Authorization": f"Bearer {raw}", "Idempotency-Key": "same-key"},
            )

    with ThreadPoolExecutor(RETRIES) as executor:
        responses = list(executor.map(send, range(RETRIES)))
    assert {r.status_code for r in responses} <= {200, 201}, [r.text for r in responses]
    assert len({r.json()["id"] for r in responses}) == 1
    assert alice.bookings.count() == 1
    assert IdempotencyKey.objects.filter(user=alice, key="same-key").count() == 1


def test_ssh_keys_are_validated_and_fingerprinted(as_alice):
    key = (
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl "
        "alice@laptop"
    )
    response = as_alice.post(
        "/api/v1/me/ssh-keys/", {"name": "laptop", "public_key": key}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["fingerprint"].startswith("SHA256:")
    again = as_alice.post("/api/v1/me/ssh-keys/", {"name": "dup", "public_key": key}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "duplicate_ssh_key"
    bad = as_alice.post("/api/v1/me/ssh-keys/", {"name": "x", "public_key": "hello"}, format="json")
    assert bad.status_code == 400 and bad.json()["extra"]["fields"]["public_key"]


def test_profile_time_zone_is_validated(as_alice):
    assert (
        as_alice.patch("/api/v1/me/", {"timezone": "Mars/Olympus"}, format="json").status_code
        == 400
    )
    assert (
        as_alice.patch(
            "/api/v1/me/", {"timezone": "Europe/Paris", "language": "en"}, format="json"
        ).json()["timezone"]
        == "Europe/Paris"
    )


def test_me_reads_every_membership_with_its_lab_in_one_query(alice, django_assert_num_queries):
    from labgpu.accounts.tests.factories import LabFactory, MembershipFactory

    client = client_for(alice, scopes=["read"])  # a fresh user per request, as in production
    client.get("/api/v1/me/")  # the token's once-a-minute last_used_at write
    with django_assert_num_queries(2):  # the token with its user; memberships with their labs
        assert len(client.get("/api/v1/me/").json()["memberships"]) == 1
    for i in range(4):
        MembershipFactory(user=alice, lab=LabFactory(name=f"Lab {i}", slug=f"lab-{i}"))
    with django_assert_num_queries(2):
        memberships = client.get("/api/v1/me/").json()["memberships"]
    assert sorted(m["lab"]["slug"] for m in memberships) == [
        "lab-0", "lab-1", "lab-2", "lab-3", "vision"
    ]  # fmt: skip


def test_idempotency_keys_are_forgotten_after_their_ttl(alice, pool, quotas, tomorrow, settings):
    from labgpu.bookings.models import IdempotencyKey
    from labgpu.bookings.tasks import purge_idempotency_keys

    settings.LABGPU_IDEMPOTENCY_TTL_HOURS = 24
    client = client_for(alice, scopes=["book"])
    body = {
        "pool": pool.pk,
        "start": tomorrow.isoformat(),
        "end": (tomorrow + timedelta(hours=1)).isoformat(),
    }
    old = client.post("/api/v1/bookings/", body, format="json", HTTP_IDEMPOTENCY_KEY="old")
    later = {**body, "start": body["end"], "end": (tomorrow + timedelta(hours=2)).isoformat()}
    fresh = client.post("/api/v1/bookings/", later, format="json", HTTP_IDEMPOTENCY_KEY="fresh")
    IdempotencyKey.objects.filter(key="old").update(created_at=now() - timedelta(hours=25))

    assert purge_idempotency_keys.apply().get() == 1
    assert set(IdempotencyKey.objects.values_list("key", flat=True)) == {"fresh"}
    # The booking stays; only the key is forgotten: the key is free for a new request (before
    # the purge, a different body with it was a 422).
    elsewhere = {
        **body,
        "start": (tomorrow + timedelta(hours=6)).isoformat(),
        "end": (tomorrow + timedelta(hours=7)).isoformat(),
    }
    again = client.post("/api/v1/bookings/", elsewhere, format="json", HTTP_IDEMPOTENCY_KEY="old")
    assert (old.status_code, fresh.status_code, again.status_code) == (201, 201, 201)
    assert again.json()["id"] != old.json()["id"]
    assert alice.bookings.count() == 3


def test_password_guessing_is_throttled_per_address(alice, monkeypatch):
    from django.core.cache import cache

    from labgpu.api.throttling import LoginRateThrottle

    cache.clear()
    monkeypatch.setattr(LoginRateThrottle, "rate", "2/min", raising=False)
    client = APIClient()
    guess = {"username": "alice", "password": "wrong"}
    codes = [client.post("/api/v1/auth/login/", guess, format="json").status_code for _ in range(3)]
    assert 429 not in codes[:2] and codes[2] == 429
    cache.clear()


@pytest.mark.security
def test_csrf_failure_on_drf_paths_answers_csrf_failed(alice):
    """A signed-in browser's write without the CSRF token: the code docs/api.md promises, on DRF
    views as on Django's own CSRF failure view (the login above)."""
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post("/api/v1/me/ssh-keys/", {"name": "k", "public_key": "ssh-ed25519 AAAA"})
    assert response.status_code == 403
    assert response.json()["code"] == "csrf_failed"
    assert alice.ssh_keys.count() == 0


def test_token_authenticate_loads_token_and_user_as_the_orm_does(alice):
    token, raw = token_create(
        user=alice, name="script", scopes=["read", "book"], expires_at=now() + timedelta(days=1)
    )
    found = token_authenticate(raw)
    stored = ApiToken.objects.select_related("user").get(pk=token.pk)
    assert found is not None and found.scopes == ["book", "read"]
    for field in ApiToken._meta.concrete_fields:
        if field.name != "last_used_at":  # touched by this very call
            assert getattr(found, field.attname) == getattr(stored, field.attname), field.name
    for field in type(alice)._meta.concrete_fields:
        assert getattr(found.user, field.attname) == getattr(stored.user, field.attname), field.name
    assert found.user.pk == alice.pk and not found._state.adding

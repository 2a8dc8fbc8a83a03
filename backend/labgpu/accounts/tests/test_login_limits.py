"""Password guessing (issue 11 items 3 and 4): a per-client limit that a forged X-Forwarded-For
cannot dodge (forwarding headers count only from LABGPU_TRUSTED_PROXIES), a per-account back-off
that grows and is capped (never a lock-out for good), and the same limits on /admin/login/."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from labgpu.accounts.tests.factories import UserFactory
from labgpu.core.timeutils import now

pytestmark = [pytest.mark.django_db, pytest.mark.security]

RIGHT = "correct horse battery staple"
LOGIN = "/api/v1/auth/login/"


@pytest.fixture(autouse=True)
def clean_cache(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()
    yield
    cache.clear()


def login(client, username, password, **headers):
    return client.post(
        LOGIN, {"username": username, "password": password}, format="json", headers=headers
    )


def admin_login(client, username, password, **headers):
    """The admin's HTML form, posted as a browser does (a django.test.Client)."""
    return client.post(
        "/admin/login/?next=/admin/",
        {"username": username, "password": password, "next": "/admin/"},
        headers=headers,
    )


def test_login_throttle_ignores_a_client_supplied_x_forwarded_for(alice):
    """The finding: 30 wrong passwords with 30 forged headers, then the right one got in."""
    client = APIClient()
    statuses = [
        login(client, "alice", f"guess-{n}", x_forwarded_for=f"203.0.113.{n}").status_code
        for n in range(30)
    ]
    assert 429 in statuses
    final = login(client, "alice", RIGHT, x_forwarded_for="198.51.100.7")
    assert final.status_code == 429 and final.json()["code"] == "throttled"
    assert "sessionid" not in final.cookies


def test_client_limit_counts_the_peer_address_when_no_proxy_is_trusted(db):
    """Ten guesses at ten different accounts from one address: the eleventh is refused, whatever
    X-Forwarded-For says (the per-account back-off never kicks in here)."""
    client = APIClient()
    statuses = [
        login(client, f"user{n}", "wrong", x_forwarded_for=f"203.0.113.{n}").status_code
        for n in range(11)
    ]
    assert statuses == [401] * 10 + [429]


def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_limit(db, settings):
    settings.LABGPU_TRUSTED_PROXIES = ["127.0.0.0/8"]  # the test client's REMOTE_ADDR
    client = APIClient()
    first = [
        login(client, f"user{n}", "wrong", x_forwarded_for="203.0.113.9").status_code
        for n in range(11)
    ]
    assert first == [401] * 10 + [429]
    other = login(client, "user99", "wrong", x_forwarded_for="198.51.100.7")
    assert other.status_code == 401
    # A client cannot escape by prepending addresses: the proxy appends the one it saw.
    forged = login(client, "user98", "wrong", x_forwarded_for="192.0.2.1, 203.0.113.9")
    assert forged.status_code == 429


def test_per_account_backoff_grows_is_capped_and_lets_the_user_back_in(db, settings, monkeypatch):
    settings.LABGPU_LOGIN_FREE_FAILURES = 3
    settings.LABGPU_LOGIN_BACKOFF_BASE_S = 2
    settings.LABGPU_LOGIN_BACKOFF_MAX_S = 60
    settings.LABGPU_TRUSTED_PROXIES = ["127.0.0.0/8"]
    UserFactory(username="dora")
    clock = {"at": now()}
    monkeypatch.setattr("labgpu.accounts.login_limits.now", lambda: clock["at"])
    client = APIClient()
    n = iter(range(1, 1000))

    def attempt(password):  # a fresh client address each time: only the account limit applies
        return login(client, "dora", password, x_forwarded_for=f"10.0.{next(n)}.1")

    assert [attempt("wrong").status_code for _ in range(3)] == [401] * 3
    waits = []
    for _ in range(8):
        assert attempt("wrong").status_code == 401  # one guess per back-off window
        refused = attempt("wrong")
        assert refused.status_code == 429 and refused.json()["code"] == "throttled"
        waits.append(int(refused["Retry-After"]))
        # Refused attempts do not lengthen the wait, and the right password waits too.
        assert int(attempt(RIGHT)["Retry-After"]) <= waits[-1]
        clock["at"] += timedelta(seconds=waits[-1])
    assert waits == [2, 4, 8, 16, 32, 60, 60, 60]
    ok = attempt(RIGHT)
    assert ok.status_code == 200 and ok.json()["username"] == "dora"
    # A success forgets the failures.
    assert [attempt("wrong").status_code for _ in range(3)] == [401] * 3


def test_admin_login_is_throttled_like_the_api_login(db, settings):
    """The finding: 25 wrong passwords at /admin/login/ were 25 × 200 and never slowed down."""
    settings.LABGPU_TRUSTED_PROXIES = []
    UserFactory(username="carol", is_staff=True)
    client = Client()
    statuses = [admin_login(client, "carol", f"guess-{n}").status_code for n in range(25)]
    assert 429 in statuses
    throttled = admin_login(client, "carol", RIGHT)
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0
    assert "_auth_user_id" not in client.session
    # The same limiter: the API login from this address is refused too.
    assert login(APIClient(), "someone", "wrong").status_code == 429


def test_admin_login_failures_count_against_the_account_on_the_api(db, settings):
    settings.LABGPU_LOGIN_FREE_FAILURES = 3
    settings.LABGPU_TRUSTED_PROXIES = ["127.0.0.0/8"]
    UserFactory(username="carol", is_staff=True)
    for n in range(4):
        response = admin_login(Client(), "carol", "wrong", x_forwarded_for=f"10.1.{n}.1")
        assert response.status_code == 200  # the form again, with its error
    refused = login(APIClient(), "carol", RIGHT, x_forwarded_for="10.2.0.1")
    assert refused.status_code == 429


def test_admin_login_still_works(db):
    UserFactory(username="carol", is_staff=True)
    client = Client()
    response = admin_login(client, "carol", RIGHT)
    assert response.status_code == 302 and client.session["_auth_user_id"]

"""OIDC sign-in against a real OpenID Provider (oidc-provider under Node, on loopback): discovery,
the code exchange with PKCE, and ID tokens refused when tampered, expired, for another audience or
with another nonce. Checked against the OP's own answers and LabGPU's rows."""

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.test import Client

from labgpu.accounts.models import Membership, User
from labgpu.accounts.tests.factories import LabFactory
from labgpu.audit.models import AuditEvent
from labgpu.core.timeutils import now
from labgpu.sso import oidc
from labgpu.sso.discovery import oidc_setting, provider_metadata
from labgpu.sso.models import GroupMapping, OidcIdentity
from labgpu.sso.tests.op_server import (
    CLIENT_ID,
    CLIENT_SECRET,
    OTHER_CLIENT_ID,
    OTHER_CLIENT_SECRET,
    walk_sign_in,
)

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def start_sign_in(client: Client, next_path: str = "/") -> str:
    response = client.get("/oidc/login/", {"next": next_path})
    assert response.status_code == 302, response.content
    return response["Location"]


def sign_in(client: Client, login: str = "dana", next_path: str = "/"):
    """The whole browser round trip; returns LabGPU's answer to the callback."""
    callback = walk_sign_in(start_sign_in(client, next_path), login)
    parts = urlsplit(callback)
    return client.get(parts.path, parse_qs(parts.query))


def signed_in_as(client: Client) -> str | None:
    response = client.get("/api/v1/me/")
    return response.json()["username"] if response.status_code == 200 else None


def test_discovery_finds_the_providers_endpoints(oidc_on):
    metadata = provider_metadata()

    assert metadata["issuer"] == oidc_on.issuer
    assert oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT") == f"{oidc_on.issuer}/auth"
    assert oidc_setting("OIDC_OP_TOKEN_ENDPOINT") == f"{oidc_on.issuer}/token"
    assert oidc_setting("OIDC_OP_JWKS_ENDPOINT") == f"{oidc_on.issuer}/jwks"


def test_login_asks_for_code_with_pkce_nonce_and_state(oidc_on):
    query = parse_qs(urlsplit(start_sign_in(Client())).query)

    assert query["response_type"] == ["code"]
    assert query["client_id"] == [CLIENT_ID]
    assert query["code_challenge_method"] == ["S256"]
    assert len(query["code_challenge"][0]) == 43
    assert query["nonce"] and query["state"]


def test_first_sign_in_creates_the_user_and_the_spa_loads_signed_in_at_next(oidc_on, settings):
    vision = LabFactory(slug="vision")
    GroupMapping.objects.create(
        source="oidc", issuer=oidc_on.issuer, group="vision-members", lab=vision, role="member"
    )
    settings.LABGPU_OIDC_SITE_ADMIN_GROUPS = ["it-staff"]
    client = Client()

    answer = sign_in(client, "dana", next_path="/bookings/42?view=week")

    assert answer.status_code == 302
    assert answer["Location"] == "/bookings/42?view=week"
    assert signed_in_as(client) == "dana"
    dana = User.objects.get(username="dana")
    assert (dana.email, dana.first_name, dana.last_name) == ("dana@uni.example", "Dana", "Scully")
    assert (dana.timezone, dana.language) == ("Asia/Shanghai", "zh-hans")
    assert not dana.has_usable_password()
    identity = OidcIdentity.objects.get(user=dana)
    assert (identity.issuer, identity.subject, identity.link_method) == (
        oidc_on.issuer,
        "dana",
        "created",
    )
    assert Membership.objects.get(user=dana).lab == vision
    assert dana.is_staff
    assert AuditEvent.objects.filter(action="user.sso_create", target_id=str(dana.pk)).exists()
    # The SPA's own page, served by Django at the path the user asked for.
    assert client.get("/bookings/42").status_code == 200


def test_claims_that_are_not_a_time_zone_or_a_known_language_leave_the_defaults(oidc_on):
    sign_in(Client(), "erin")

    erin = User.objects.get(username="erin")
    assert (erin.timezone, erin.language) == ("UTC", "en")


def test_a_second_sign_in_finds_the_same_user_and_keeps_their_own_choices(oidc_on):
    sign_in(Client(), "dana")
    dana = User.objects.get(username="dana")
    dana.timezone = "Europe/Paris"
    dana.save()

    sign_in(Client(), "dana")

    assert User.objects.filter(username__startswith="dana").count() == 1
    dana.refresh_from_db()
    assert dana.email == "dana@uni.example"  # the provider's verified address
    assert dana.timezone == "Europe/Paris"  # the person's own choice stays
    assert OidcIdentity.objects.filter(user=dana).count() == 1


def test_the_op_refuses_a_client_without_pkce(oidc_on, settings):
    settings.OIDC_USE_PKCE = False
    client = Client()

    answer = sign_in(client, "dana")

    assert answer["Location"] == "/login?sso_error=1"
    assert signed_in_as(client) is None
    assert not User.objects.filter(username="dana").exists()


def _hand_labgpu(monkeypatch, token_response: dict) -> None:
    """LabGPU's code exchange (real, with the OP) returns `token_response` instead."""
    real = oidc.OidcBackend.get_token

    def get_token(self, payload):
        real(self, payload)
        return token_response

    monkeypatch.setattr(oidc.OidcBackend, "get_token", get_token)


def _refused(client: Client, answer) -> bool:
    return (
        answer["Location"] == "/login?sso_error=1"
        and signed_in_as(client) is None
        and not User.objects.filter(username="dana").exists()
    )


def test_a_tampered_id_token_is_refused(oidc_on, monkeypatch):
    real = oidc.OidcBackend.get_token

    def tampered(self, payload):
        tokens = real(self, payload)
        header, body, signature = tokens["id_token"].split(".")
        # Another signature character: the token no longer verifies with the OP's key.
        flipped = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
        return {**tokens, "id_token": f"{header}.{body}.{flipped}"}

    monkeypatch.setattr(oidc.OidcBackend, "get_token", tampered)
    client = Client()

    assert _refused(client, sign_in(client, "dana"))


def test_an_expired_id_token_is_refused(oidc_on, monkeypatch):
    # The OP's ID tokens live an hour; LabGPU's clock reads two hours later.
    monkeypatch.setattr(oidc, "now", lambda: now() + timedelta(hours=2))
    client = Client()

    assert _refused(client, sign_in(client, "dana"))


def test_an_id_token_for_another_audience_is_refused(oidc_on, monkeypatch):
    client = Client()
    auth_url = start_sign_in(client)
    nonce = parse_qs(urlsplit(auth_url).query)["nonce"][0]
    # Genuine, signed by the OP, with the session's nonce, but issued to another client.
    foreign = oidc_on.token_response(
        client_id=OTHER_CLIENT_ID, secret=OTHER_CLIENT_SECRET, nonce=nonce, login="dana"
    )
    _hand_labgpu(monkeypatch, foreign)

    callback = urlsplit(walk_sign_in(auth_url, "dana"))
    answer = client.get(callback.path, parse_qs(callback.query))

    assert _refused(client, answer)


def test_an_id_token_with_another_nonce_is_refused(oidc_on, monkeypatch):
    replayed = oidc_on.token_response(
        client_id=CLIENT_ID, secret=CLIENT_SECRET, nonce="not-this-sessions", login="dana"
    )
    _hand_labgpu(monkeypatch, replayed)
    client = Client()

    assert _refused(client, sign_in(client, "dana"))


def test_an_unknown_state_is_refused(oidc_on):
    client = Client()
    start_sign_in(client)

    answer = client.get("/oidc/callback/", {"code": "x", "state": "forged"})

    assert answer["Location"] == "/login?sso_error=1"
    assert signed_in_as(client) is None


def test_logout_ends_the_session_and_hands_the_browser_to_the_op(oidc_on):
    client = Client(enforce_csrf_checks=True)
    sign_in(client, "dana")
    client.get("/api/v1/auth/csrf/")

    answer = client.post("/api/v1/auth/logout/", HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value)

    assert answer.status_code == 200
    assert signed_in_as(client) is None
    redirect = answer.json()["redirect_url"]
    parts = urlsplit(redirect)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"{oidc_on.issuer}/session/end"
    query = parse_qs(parts.query)
    assert query["post_logout_redirect_uri"] == ["http://testserver/login"]
    # The OP accepts the hint and the return address: it asks to confirm the logout.
    confirm = requests.get(redirect, timeout=10)
    assert confirm.status_code == 200
    assert "logout" in confirm.text.lower()


def test_a_disabled_user_loses_the_session_and_cannot_sign_in_again(oidc_on):
    client = Client()
    sign_in(client, "dana")
    User.objects.filter(username="dana").update(is_active=False)

    assert signed_in_as(client) is None
    again = Client()
    assert sign_in(again, "dana")["Location"] == "/login?sso_error=1"
    assert signed_in_as(again) is None


def test_oidc_urls_are_absent_until_configured(db):
    assert Client().get("/oidc/login/").status_code == 404
    assert Client().get("/oidc/callback/").status_code == 404

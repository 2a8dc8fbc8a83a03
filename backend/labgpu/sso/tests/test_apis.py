"""The login page's sign-in options, password login turned off, group mappings over HTTP, and a
disabled user's tokens, feeds and sessions (issue 16 items 3, 5, 6)."""

import pytest
from rest_framework.test import APIClient

from conftest import client_for
from labgpu.accounts.services import token_create
from labgpu.audit.models import AuditEvent
from labgpu.sso.models import GroupMapping

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"


def test_providers_list_oidc_when_configured_without_a_session(settings):
    settings.LABGPU_OIDC_ENABLED = True
    settings.LABGPU_OIDC_NAME = "Uni SSO"

    body = APIClient().get("/api/v1/auth/providers/").json()

    assert body == {
        "password_login": True,
        "providers": [{"id": "oidc", "name": "Uni SSO", "login_url": "/oidc/login/"}],
    }


def test_no_providers_and_password_login_by_default(db):
    body = APIClient().get("/api/v1/auth/providers/").json()

    assert body == {"password_login": True, "providers": []}


def test_local_login_off_refuses_passwords_in_the_api_and_the_admin(settings, alice, carol):
    carol.set_password(PASSWORD)
    carol.save()
    settings.LABGPU_LOCAL_LOGIN_ENABLED = False
    client = APIClient()

    refused = client.post("/api/v1/auth/login/", {"username": "alice", "password": PASSWORD})
    admin = client.post("/admin/login/", {"username": "carol", "password": PASSWORD})

    assert refused.status_code == 403
    assert refused.json()["code"] == "password_login_disabled"
    assert client.get("/api/v1/auth/providers/").json()["password_login"] is False
    assert admin.status_code == 200  # the form again, with its error; no session
    assert client.get("/api/v1/me/").status_code == 401


def test_local_login_on_still_signs_in(alice):
    client = APIClient()
    answer = client.post("/api/v1/auth/login/", {"username": "alice", "password": PASSWORD})
    assert answer.status_code == 200
    assert client.post("/api/v1/auth/logout/").json() == {"redirect_url": None}


def test_site_admins_map_groups_and_each_change_is_audited(as_carol, as_bob, vision_lab):
    assert as_bob.get("/api/v1/sso/group-mappings/").status_code == 403
    made = as_carol.post(
        "/api/v1/sso/group-mappings/",
        {"group": "cn=vision,ou=groups", "lab": vision_lab.pk, "role": "lab_admin"},
    )
    assert made.status_code == 201, made.content
    duplicate = as_carol.post(
        "/api/v1/sso/group-mappings/",
        {"group": "CN=Vision,OU=Groups", "lab": vision_lab.pk, "role": "member"},
    )
    assert duplicate.status_code == 409
    mapping_id = made.json()["id"]
    changed = as_carol.patch(f"/api/v1/sso/group-mappings/{mapping_id}/", {"role": "member"})
    assert changed.json()["role"] == "member"
    oidc = as_carol.post(
        "/api/v1/sso/group-mappings/",
        {"source": "oidc", "issuer": "https://idp.example", "group": "it", "lab": vision_lab.pk},
    )
    assert oidc.status_code == 201, oidc.content
    other_case = as_carol.post(
        "/api/v1/sso/group-mappings/",
        {"source": "oidc", "issuer": "https://idp.example", "group": "IT", "lab": vision_lab.pk},
    )
    assert other_case.status_code == 201  # OIDC values compare exactly: another group
    no_lab = as_carol.post(
        "/api/v1/sso/group-mappings/", {"group": "cn=x,ou=groups", "role": "member"}
    )
    assert no_lab.status_code == 400 and no_lab.json()["code"] == "lab_required"
    assert as_carol.delete(f"/api/v1/sso/group-mappings/{mapping_id}/").status_code == 204

    assert sorted(GroupMapping.objects.values_list("group", flat=True)) == ["IT", "it"]
    assert list(
        AuditEvent.objects.filter(action__startswith="sso.")
        .order_by("pk")
        .values_list("action", flat=True)
    ) == [
        "sso.mapping_create",
        "sso.mapping_update",
        "sso.mapping_create",
        "sso.mapping_create",
        "sso.mapping_delete",
    ]


def test_I10_no_mapping_by_cn_and_no_site_admin_mapping_in_the_database(as_carol, vision_lab):
    by_cn = as_carol.post(
        "/api/v1/sso/group-mappings/", {"group": "gpu-admins", "lab": vision_lab.pk}
    )
    site_admin = as_carol.post(
        "/api/v1/sso/group-mappings/", {"group": "cn=gpu-admins,ou=groups", "role": "site_admin"}
    )

    assert by_cn.status_code == 400 and by_cn.json()["code"] == "group_not_a_dn"
    assert "group" in by_cn.json()["extra"]["fields"]
    assert site_admin.status_code == 400
    assert site_admin.json()["code"] == "site_admin_from_environment"
    assert not GroupMapping.objects.exists()


def test_a_disabled_user_loses_api_tokens_feeds_and_sessions_at_once(alice):
    _, raw = token_create(user=alice, name="script", scopes=["read", "feeds"])
    with_token = APIClient()
    with_token.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    feed_url = with_token.post("/api/v1/feeds/", {"kind": "user"}, format="json").json()["url"]
    with_session = APIClient()
    with_session.post("/api/v1/auth/login/", {"username": "alice", "password": PASSWORD})
    assert with_token.get("/api/v1/me/").status_code == 200
    assert APIClient().get(feed_url).status_code == 200
    assert with_session.get("/api/v1/me/").status_code == 200

    alice.is_active = False
    alice.save(update_fields=["is_active"])

    assert with_token.get("/api/v1/me/").status_code == 401
    assert APIClient().get(feed_url).status_code == 404
    assert with_session.get("/api/v1/me/").status_code in (401, 403)


def test_a_token_acts_only_as_its_owner(alice, bob):
    _, raw = token_create(user=alice, name="script", scopes=["admin"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")

    assert client.get("/api/v1/me/").json()["username"] == "alice"
    assert client_for(bob).get("/api/v1/tokens/").json() == []


def test_I10_site_admins_list_confirm_and_cut_links_made_by_username(carol, alice, bob):
    from django.test import Client

    from labgpu.sso.models import OidcIdentity

    carol.is_superuser = True
    carol.save()
    flagged = OidcIdentity.objects.create(
        user=alice, issuer="https://idp.example", subject="a-1", link_method="username"
    )
    other = OidcIdentity.objects.create(
        user=bob, issuer="https://idp.example", subject="b-1", link_method="username"
    )
    OidcIdentity.objects.create(user=carol, issuer="https://idp.example", subject="c-1")
    client = Client()
    client.force_login(carol)

    listed = client.get("/admin/sso/oidcidentity/", {"flagged": "yes"})
    confirm = client.post(
        "/admin/sso/oidcidentity/",
        {"action": "confirm_links", "_selected_action": [flagged.pk]},
    )
    cut = client.post(
        "/admin/sso/oidcidentity/", {"action": "cut_links", "_selected_action": [other.pk]}
    )

    assert listed.status_code == 200
    assert listed.context["cl"].result_count == 2  # carol's own, created by sign-in, is not
    assert confirm.status_code == 302 and cut.status_code == 302
    flagged.refresh_from_db()
    assert flagged.confirmed_by == carol and not flagged.flagged
    assert not OidcIdentity.objects.filter(pk=other.pk).exists()
    assert set(
        AuditEvent.objects.filter(action__startswith="sso.link").values_list("action", flat=True)
    ) == {"sso.link_confirm", "sso.link_cut"}


def test_I10_the_review_api_lists_confirms_and_cuts_links_made_by_username(
    as_carol, as_bob, alice, bob
):
    from labgpu.sso.models import OidcIdentity

    flagged = OidcIdentity.objects.create(
        user=alice, issuer="https://idp.example", subject="a-1", link_method="username"
    )
    other = OidcIdentity.objects.create(
        user=bob, issuer="https://idp.example", subject="b-1", link_method="username"
    )

    listed = as_carol.get("/api/v1/sso/identity-links/").json()
    refused = as_bob.post("/api/v1/sso/identity-links/cut/", {"kind": "oidc", "id": other.pk})
    confirmed = as_carol.post(
        "/api/v1/sso/identity-links/confirm/", {"kind": "oidc", "id": flagged.pk}
    )
    cut = as_carol.post("/api/v1/sso/identity-links/cut/", {"kind": "oidc", "id": other.pk})
    missing = as_carol.post("/api/v1/sso/identity-links/cut/", {"kind": "ldap", "id": other.pk})

    assert [(row["user"], row["identifier"]) for row in listed] == [
        ("alice", "a-1"),
        ("bob", "b-1"),
    ]
    assert refused.status_code == 403
    assert confirmed.status_code == 200 and confirmed.json()["confirmed_at"]
    assert cut.status_code == 204 and missing.status_code == 404
    assert list(OidcIdentity.objects.values_list("subject", flat=True)) == ["a-1"]
    assert as_carol.get("/api/v1/sso/identity-links/").json() == []

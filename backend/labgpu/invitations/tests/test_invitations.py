"""Invitations (issue 16 item 4): lab admins invite by e-mail; the link works once, expires, is
stored hashed; the invitee joins only by accepting, signed in or by making a local account."""

import hashlib
import re
from datetime import timedelta

import pytest
from django.core import mail
from django.core.cache import cache
from rest_framework.test import APIClient

from conftest import client_for
from labgpu.accounts.models import Membership, User
from labgpu.accounts.tests.factories import UserFactory
from labgpu.audit.models import AuditEvent
from labgpu.core.timeutils import now
from labgpu.invitations.apis import InvitationRateThrottle
from labgpu.invitations.models import Invitation
from labgpu.ops.gunicorn import redact

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_limits(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.LABGPU_PUBLIC_URL = "https://labgpu.uni.example"
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def dana(db):
    """Has an account, in no lab yet."""
    return UserFactory(username="dana", email="dana@uni.example", language="zh-hans")


def invite(client, lab, email="dana@uni.example", role="member"):
    return client.post(f"/api/v1/labs/{lab.pk}/invitations/", {"email": email, "role": role})


def token_of(response) -> str:
    return response.json()["link"].rsplit("/", 1)[1]


def accept(client, token):
    return client.post("/api/v1/invitations/accept/", {"token": token})


def test_lab_admin_invites_by_email_and_only_a_hash_of_the_link_is_kept(
    bob, vision_lab, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = invite(client_for(bob), vision_lab, email="erin@uni.example")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "pending" and body["email"] == "erin@uni.example"
    link = body["link"]
    assert link.startswith("https://labgpu.uni.example/invite/lgi_")
    stored = Invitation.objects.get(pk=body["id"])
    raw = token_of(response)
    assert stored.token_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in str(stored.__dict__)
    assert abs(stored.expires_at - (now() + timedelta(days=7))) < timedelta(minutes=1)
    assert [m.to for m in mail.outbox] == [["erin@uni.example"]]
    assert link in mail.outbox[0].body
    # Nobody known has that address: the inviter's language first, then the other one.
    assert "Vision Lab" in mail.outbox[0].subject and "邀请" in mail.outbox[0].body
    assert AuditEvent.objects.filter(action="invitation.create", target_id=str(stored.pk)).exists()


def test_the_mail_speaks_the_invitees_language_when_they_have_an_account(
    bob, vision_lab, dana, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        invite(client_for(bob), vision_lab)

    assert mail.outbox[0].subject == "bob 邀请您加入 LabGPU 上的 Vision Lab"
    assert "Open this link" not in mail.outbox[0].body


def test_members_and_other_labs_cannot_invite_or_see_invitations(alice, mallory, vision_lab, bob):
    invite(client_for(bob), vision_lab)

    assert invite(client_for(alice), vision_lab).status_code == 403
    assert client_for(alice).get(f"/api/v1/labs/{vision_lab.pk}/invitations/").status_code == 403
    assert invite(client_for(mallory), vision_lab).status_code == 404
    assert Invitation.objects.count() == 1


def test_lab_admins_add_people_only_by_invitation(bob, vision_lab, dana):
    direct = client_for(bob).post(
        f"/api/v1/labs/{vision_lab.pk}/members/", {"user": dana.pk, "role": "member"}
    )

    assert direct.status_code == 403 and direct.json()["code"] == "not_site_admin"
    assert not Membership.objects.filter(user=dana).exists()


def test_invitee_joins_after_signing_in_and_the_link_works_once(bob, vision_lab, dana, mallory):
    token = token_of(invite(client_for(bob), vision_lab))
    assert not Membership.objects.filter(user=dana).exists()  # not before accepting

    response = accept(client_for(dana), token)

    assert response.status_code == 200, response.content
    assert response.json() == {
        "lab": {"id": vision_lab.pk, "name": "Vision Lab", "slug": "vision"},
        "role": "member",
    }
    membership = Membership.objects.get(user=dana, lab=vision_lab)
    assert (membership.role, membership.source) == ("member", "")
    invitation = Invitation.objects.get()
    assert invitation.accepted_by == dana and invitation.status == "accepted"
    assert AuditEvent.objects.filter(action="invitation.accept", actor=dana).exists()
    again = accept(client_for(mallory), token)
    assert again.status_code == 409 and again.json()["code"] == "invitation_closed"
    assert not Membership.objects.filter(user=mallory, lab=vision_lab).exists()


def test_expired_invitation_is_refused(bob, vision_lab, dana):
    token = token_of(invite(client_for(bob), vision_lab))
    Invitation.objects.update(expires_at=now() - timedelta(seconds=1))

    response = accept(client_for(dana), token)

    assert response.status_code == 409 and response.json()["code"] == "invitation_expired"
    assert not Membership.objects.filter(user=dana).exists()


def test_revoked_invitation_is_refused_and_leaves_the_pending_list(bob, vision_lab, dana):
    as_bob = client_for(bob)
    token = token_of(invite(as_bob, vision_lab))
    other = invite(as_bob, vision_lab, email="erin@uni.example").json()
    pending = as_bob.get(f"/api/v1/labs/{vision_lab.pk}/invitations/").json()
    assert {i["email"] for i in pending} == {"dana@uni.example", "erin@uni.example"}

    revoked = as_bob.delete(
        f"/api/v1/labs/{vision_lab.pk}/invitations/{Invitation.objects.get(email='dana@uni.example').pk}/"
    )

    assert revoked.status_code == 204
    assert accept(client_for(dana), token).json()["code"] == "invitation_closed"
    pending = as_bob.get(f"/api/v1/labs/{vision_lab.pk}/invitations/").json()
    assert [i["id"] for i in pending] == [other["id"]]
    assert AuditEvent.objects.filter(action="invitation.revoke").count() == 1


def test_one_pending_invitation_per_address_and_none_for_members(bob, alice, vision_lab):
    as_bob = client_for(bob)
    assert invite(as_bob, vision_lab, email="Erin@uni.example").status_code == 201

    assert invite(as_bob, vision_lab, email="erin@UNI.example").json()["code"] == "already_invited"
    assert invite(as_bob, vision_lab, email=alice.email).json()["code"] == "already_member"


def test_invitations_are_throttled_per_lab_admin(bob, vision_lab, monkeypatch):
    monkeypatch.setattr(InvitationRateThrottle, "rate", "2/hour", raising=False)
    as_bob = client_for(bob)

    codes = [invite(as_bob, vision_lab, email=f"p{n}@uni.example").status_code for n in range(3)]

    assert codes == [201, 201, 429]
    assert Invitation.objects.count() == 2


def anonymous_with_csrf() -> tuple[APIClient, str]:
    client = APIClient(enforce_csrf_checks=True)
    client.get("/api/v1/auth/csrf/")
    return client, client.cookies["csrftoken"].value


def test_preview_tells_the_link_holder_what_it_offers(bob, vision_lab):
    created = invite(client_for(bob), vision_lab, email="erin@uni.example", role="lab_admin")
    token = token_of(created)

    preview = APIClient().post("/api/v1/invitations/preview/", {"token": token})

    assert preview.status_code == 200
    assert preview.json()["lab"]["name"] == "Vision Lab"
    assert preview.json()["role"] == "lab_admin" and preview.json()["status"] == "pending"
    assert preview.json()["signup_allowed"] is True
    unknown = APIClient().post("/api/v1/invitations/preview/", {"token": token[:-2] + "xx"})
    assert unknown.status_code == 404 and unknown.json()["code"] == "invitation_invalid"


def test_someone_without_an_account_signs_up_from_the_invitation(bob, vision_lab):
    token = token_of(invite(client_for(bob), vision_lab, email="erin@uni.example"))
    client, csrf = anonymous_with_csrf()

    response = client.post(
        "/api/v1/invitations/sign-up/",
        {"token": token, "username": "erin", "password": "a-long-enough-passphrase"},
        HTTP_X_CSRFTOKEN=csrf,
    )

    assert response.status_code == 201, response.content
    erin = User.objects.get(username="erin")
    assert erin.email == "erin@uni.example" and erin.check_password("a-long-enough-passphrase")
    assert Membership.objects.filter(user=erin, lab=vision_lab).exists()
    me = client.get("/api/v1/me/")
    assert me.status_code == 200 and me.json()["memberships"][0]["lab"]["slug"] == "vision"
    again = APIClient().post(
        "/api/v1/invitations/sign-up/",
        {"token": token, "username": "erin2", "password": "a-long-enough-passphrase"},
    )
    assert again.status_code == 409
    assert not User.objects.filter(username="erin2").exists()


def test_sign_up_is_refused_where_local_accounts_are_off(settings, bob, vision_lab):
    settings.LABGPU_LOCAL_LOGIN_ENABLED = False
    token = token_of(invite(client_for(bob), vision_lab, email="erin@uni.example"))
    client, csrf = anonymous_with_csrf()

    preview = client.post("/api/v1/invitations/preview/", {"token": token}, HTTP_X_CSRFTOKEN=csrf)
    response = client.post(
        "/api/v1/invitations/sign-up/",
        {"token": token, "username": "erin", "password": "a-long-enough-passphrase"},
        HTTP_X_CSRFTOKEN=csrf,
    )

    assert preview.json()["signup_allowed"] is False
    assert response.status_code == 403 and response.json()["code"] == "local_login_disabled"
    assert not User.objects.filter(username="erin").exists()


def test_sign_up_is_refused_for_an_address_that_has_an_account(bob, vision_lab, dana):
    token = token_of(invite(client_for(bob), vision_lab))
    client, csrf = anonymous_with_csrf()

    response = client.post(
        "/api/v1/invitations/sign-up/",
        {"token": token, "username": "dana2", "password": "a-long-enough-passphrase"},
        HTTP_X_CSRFTOKEN=csrf,
    )

    assert response.status_code == 409 and response.json()["code"] == "account_exists"
    assert Invitation.objects.get().status == "pending"


def test_sign_up_checks_the_password_like_every_local_account(bob, vision_lab):
    token = token_of(invite(client_for(bob), vision_lab, email="erin@uni.example"))
    client, csrf = anonymous_with_csrf()

    response = client.post(
        "/api/v1/invitations/sign-up/",
        {"token": token, "username": "erin", "password": "password"},
        HTTP_X_CSRFTOKEN=csrf,
    )

    assert response.status_code == 400 and response.json()["code"] == "invalid_signup"
    assert not User.objects.filter(username="erin").exists()
    assert Invitation.objects.get().status == "pending"


def test_invitation_links_never_reach_the_access_log():
    line = 'GET /invite/lgi_0a1b2c3d_Zm9vYmFyLWJhei1xdXV4LXNlY3JldA HTTP/1.1" 200'

    assert redact(line) == 'GET /invite/lgi_0a1b2c3d_[redacted] HTTP/1.1" 200'
    assert re.search(r"Zm9v", redact(line)) is None


def test_sign_up_attempts_share_the_login_limit_per_address(db):
    client, csrf = anonymous_with_csrf()
    body = {"token": "lgi_00000000_not-a-real-secret", "username": "x", "password": "y"}

    codes = [
        client.post("/api/v1/invitations/sign-up/", body, HTTP_X_CSRFTOKEN=csrf).status_code
        for _ in range(11)
    ]

    assert codes == [404] * 10 + [429]  # LABGPU_THROTTLE_LOGIN: 10/min

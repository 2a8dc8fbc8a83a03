"""An e-mail address counts only once its owner proved it (issue 22 item 4): `PATCH /me/` used to
set any address at once, so anyone could squat an invitee's address (their sign-up then got 409)
and receive mail meant for it. Checked against the rows in the database and the mail sent."""

import hashlib
import re
from datetime import timedelta

import pytest
from django.core import mail
from django.core.cache import cache
from rest_framework.test import APIClient

from conftest import client_for
from labgpu.accounts.apis import EmailVerificationRateThrottle
from labgpu.accounts.models import Membership, User
from labgpu.accounts.tests.factories import UserFactory
from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Notification
from labgpu.bookings.notifications import notify_person
from labgpu.core.timeutils import now
from labgpu.ops.gunicorn import redact

pytestmark = [pytest.mark.django_db, pytest.mark.security]

LINK = re.compile(r"https://labgpu\.uni\.example/verify-email/(lgv_[0-9a-f]+_[\w-]+)")


@pytest.fixture(autouse=True)
def public_url(settings):
    settings.LABGPU_PUBLIC_URL = "https://labgpu.uni.example"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()
    yield
    cache.clear()


def change_email(user, email, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return client_for(user).patch("/api/v1/me/", {"email": email}, format="json")


def mailed_token(to: str) -> str:
    mine = [m for m in mail.outbox if m.to == [to]]
    assert len(mine) == 1, [m.to for m in mail.outbox]
    return LINK.search(mine[0].body).group(1)


def verify(token):
    return APIClient().post("/api/v1/email/verify/", {"token": token}, format="json")


def test_a_new_address_waits_for_its_link_and_the_old_one_stays_in_effect(
    alice, django_capture_on_commit_callbacks
):
    response = change_email(alice, "alice.new@uni.example", django_capture_on_commit_callbacks)

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["email"], body["pending_email"]) == ("alice@example.org", "alice.new@uni.example")
    row = User.objects.get(pk=alice.pk)
    assert (row.email, row.verified_email) == ("alice@example.org", "alice@example.org")
    token = mailed_token("alice.new@uni.example")
    # Only a hash of the link's secret is kept.
    assert row.pending_email_token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in str(User.objects.filter(pk=alice.pk).values().get())

    opened = verify(token)

    assert opened.status_code == 200, opened.content
    row.refresh_from_db()
    assert (row.email, row.verified_email, row.pending_email) == (
        "alice.new@uni.example",
        "alice.new@uni.example",
        "",
    )
    assert row.pending_email_token_hash is None
    assert AuditEvent.objects.filter(action="user.email_verified", target_id=str(alice.pk)).exists()
    me = client_for(row).get("/api/v1/me/").json()
    assert (me["email"], me["email_verified"], me["pending_email"]) == (
        "alice.new@uni.example",
        True,
        "",
    )
    # Single use.
    again = verify(token)
    assert again.status_code == 404 and again.json()["code"] == "email_verification_invalid"


def test_an_expired_link_changes_nothing(alice, django_capture_on_commit_callbacks):
    change_email(alice, "alice.new@uni.example", django_capture_on_commit_callbacks)
    token = mailed_token("alice.new@uni.example")
    User.objects.filter(pk=alice.pk).update(pending_email_expires_at=now() - timedelta(seconds=1))

    response = verify(token)

    assert response.status_code == 404 and response.json()["code"] == "email_verification_invalid"
    assert User.objects.get(pk=alice.pk).email == "alice@example.org"


def test_a_second_request_replaces_the_first_link(alice, django_capture_on_commit_callbacks):
    change_email(alice, "one@uni.example", django_capture_on_commit_callbacks)
    first = mailed_token("one@uni.example")
    change_email(alice, "two@uni.example", django_capture_on_commit_callbacks)

    assert verify(first).status_code == 404
    assert verify(mailed_token("two@uni.example")).status_code == 200
    assert User.objects.get(pk=alice.pk).email == "two@uni.example"


def test_saving_the_profile_with_its_own_address_sends_nothing(
    alice, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(alice).patch(
            "/api/v1/me/", {"email": alice.email, "first_name": "Alice"}, format="json"
        )

    assert response.status_code == 200
    assert mail.outbox == []
    assert User.objects.get(pk=alice.pk).first_name == "Alice"


def test_an_unproved_address_of_an_earlier_version_can_be_verified_from_the_profile(
    alice, django_capture_on_commit_callbacks
):
    User.objects.filter(pk=alice.pk).update(verified_email="")  # as the migration leaves it
    alice.refresh_from_db()
    assert client_for(alice).get("/api/v1/me/").json()["email_verified"] is False

    with django_capture_on_commit_callbacks(execute=True):
        sent = client_for(alice).post("/api/v1/me/email/", {"email": alice.email}, format="json")

    assert sent.status_code == 200, sent.content
    assert verify(mailed_token("alice@example.org")).status_code == 200
    assert User.objects.get(pk=alice.pk).verified_email == "alice@example.org"


def test_verification_mails_are_throttled_per_person(alice, monkeypatch):
    monkeypatch.setattr(EmailVerificationRateThrottle, "rate", "2/hour", raising=False)
    as_alice = client_for(alice)

    codes = [
        as_alice.patch("/api/v1/me/", {"email": f"a{n}@uni.example"}, format="json").status_code
        for n in range(3)
    ]
    # Profile saves that send no link are not counted.
    profile = as_alice.patch("/api/v1/me/", {"first_name": "A"}, format="json").status_code

    assert codes == [200, 200, 429]
    assert profile == 200


def test_notifications_go_only_to_a_verified_address(alice):
    squatter = UserFactory(username="sam", email="victim@uni.example", verified_email="")

    notify_person(squatter, "Subject", "Body")
    notify_person(alice, "Subject", "Body")

    assert [m.to for m in mail.outbox] == [["alice@example.org"]]
    assert Notification.objects.filter(user=squatter).count() == 1  # still in the app's list


def test_squatting_an_invitees_address_does_not_block_their_sign_up(
    bob, vision_lab, mallory, django_capture_on_commit_callbacks
):
    # Mallory types the invitee's address into her profile, and an older version's row holds it
    # unverified: neither is proof, so erin can still make her account from her invitation.
    change_email(mallory, "erin@uni.example", django_capture_on_commit_callbacks)
    UserFactory(username="old", email="erin@uni.example", verified_email="")
    invited = client_for(bob).post(
        f"/api/v1/labs/{vision_lab.pk}/invitations/", {"email": "erin@uni.example"}
    )
    token = invited.json()["link"].rsplit("/", 1)[1]
    client = APIClient(enforce_csrf_checks=True)
    client.get("/api/v1/auth/csrf/")

    preview = client.post("/api/v1/invitations/preview/", {"token": token}).json()
    response = client.post(
        "/api/v1/invitations/sign-up/",
        {"token": token, "username": "erin", "password": "a-long-enough-passphrase"},
        HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value,
    )

    assert preview["signup_allowed"] is True
    assert response.status_code == 201, response.content
    erin = User.objects.get(username="erin")
    # The link proved the address.
    assert (erin.email, erin.verified_email) == ("erin@uni.example", "erin@uni.example")
    assert Membership.objects.filter(user=erin, lab=vision_lab).exists()
    assert User.objects.get(pk=mallory.pk).email == "mallory@example.org"


def test_verification_links_never_reach_the_access_log():
    line = '"GET /verify-email/lgv_0a1b2c3d_S3cr3t-Value_x HTTP/1.1" 200'

    assert "S3cr3t" not in redact(line)
    assert "lgv_0a1b2c3d_[redacted]" in redact(line)

"""Invitations are bound to the invited address (issue 22 item 4): an invitation sent to
newstudent@… was accepted by another signed-in user, who joined the lab with no warning. Now that
takes an explicit confirmation, is audited, and the inviting lab admin is told in their language."""

import pytest
from django.core import mail
from django.core.cache import cache

from conftest import client_for
from labgpu.accounts.models import Membership, User
from labgpu.accounts.tests.factories import UserFactory
from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Notification
from labgpu.invitations.models import Invitation

pytestmark = [pytest.mark.django_db, pytest.mark.security]


@pytest.fixture(autouse=True)
def fresh_limits(settings):
    settings.LABGPU_PUBLIC_URL = "https://labgpu.uni.example"
    cache.clear()
    yield
    cache.clear()


def invite_token(bob, lab, email="newstudent@uni.example") -> str:
    response = client_for(bob).post(f"/api/v1/labs/{lab.pk}/invitations/", {"email": email})
    assert response.status_code == 201, response.content
    return response.json()["link"].rsplit("/", 1)[1]


def accept(user, token, **extra):
    return client_for(user).post(
        "/api/v1/invitations/accept/", {"token": token, **extra}, format="json"
    )


def test_accepting_an_invitation_sent_to_another_address_asks_first(bob, vision_lab, mallory):
    token = invite_token(bob, vision_lab)

    response = accept(mallory, token)

    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "invitation_other_address"
    assert body["extra"]["invited_email"] == "newstudent@uni.example"
    assert body["extra"]["your_email"] == "mallory@example.org"
    assert "newstudent@uni.example" in body["message"]
    # Nothing happened: no membership, the invitation still open for its invitee.
    assert not Membership.objects.filter(user=mallory, lab=vision_lab).exists()
    assert Invitation.objects.get().accepted_at is None
    preview = client_for(mallory).post("/api/v1/invitations/preview/", {"token": token}).json()
    assert preview["address_matches"] is False and preview["status"] == "pending"


def test_a_confirmed_acceptance_from_another_address_is_audited_and_the_inviter_is_told(
    bob, vision_lab, mallory, django_capture_on_commit_callbacks
):
    User.objects.filter(pk=bob.pk).update(language="zh-hans")
    token = invite_token(bob, vision_lab)
    mail.outbox.clear()

    with django_capture_on_commit_callbacks(execute=True):
        response = accept(mallory, token, confirm_other_address=True)

    assert response.status_code == 200, response.content
    assert Membership.objects.filter(user=mallory, lab=vision_lab).exists()
    event = AuditEvent.objects.get(action="invitation.accept_other_address")
    assert event.actor_id == mallory.pk
    assert event.data["email"] == "newstudent@uni.example"
    assert event.data["user_email"] == "mallory@example.org"
    told = Notification.objects.get(user=bob)
    assert "mallory" in told.subject and "newstudent@uni.example" in told.subject
    assert "邀请" in told.subject  # bob reads Chinese
    assert [m.to for m in mail.outbox] == [["bob@example.org"]]
    assert "mallory@example.org" in mail.outbox[0].body


def test_an_unverified_address_equal_to_the_invited_one_is_not_a_match(
    bob, vision_lab, django_capture_on_commit_callbacks
):
    # Typed into a profile (or kept from before verification existed), never proved.
    sam = UserFactory(username="sam", email="newstudent@uni.example", verified_email="")
    token = invite_token(bob, vision_lab)

    response = accept(sam, token)

    assert response.status_code == 409
    assert response.json()["code"] == "invitation_other_address"
    assert response.json()["extra"]["your_email"] == ""
    assert not Membership.objects.filter(user=sam).exists()


def test_the_invitee_with_the_verified_address_joins_without_a_question(bob, vision_lab):
    newstudent = UserFactory(username="newstudent", email="NewStudent@uni.example")
    token = invite_token(bob, vision_lab)

    preview = client_for(newstudent).post("/api/v1/invitations/preview/", {"token": token})
    response = accept(newstudent, token)

    assert preview.json()["address_matches"] is True
    assert response.status_code == 200, response.content
    assert Membership.objects.filter(user=newstudent, lab=vision_lab).exists()
    assert not AuditEvent.objects.filter(action="invitation.accept_other_address").exists()
    assert not Notification.objects.filter(user=bob).exists()

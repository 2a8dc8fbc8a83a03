import pytest

from labgpu.accounts.models import Membership
from labgpu.accounts.tests.factories import UserFactory
from labgpu.audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def members_url(lab):
    return f"/api/v1/labs/{lab.pk}/members/"


def test_site_admin_adds_and_lab_admin_sets_limits_and_removes_a_member(
    as_bob, as_carol, vision_lab, alice
):
    UserFactory(username="frank")
    added = as_carol.post(
        members_url(vision_lab), {"username": "frank", "max_hours_per_week": 20}, format="json"
    )
    assert added.status_code == 201, added.content
    membership_id = added.json()["id"]
    changed = as_bob.patch(
        f"{members_url(vision_lab)}{membership_id}/", {"max_concurrent_bookings": 2}, format="json"
    )
    assert changed.json()["max_concurrent_bookings"] == 2
    assert as_bob.delete(f"{members_url(vision_lab)}{membership_id}/").status_code == 204
    actions = list(AuditEvent.objects.values_list("action", flat=True))
    assert {"membership.add", "membership.update", "membership.remove"} <= set(actions)


def test_researchers_cannot_manage_members(as_alice, vision_lab, bob):
    UserFactory(username="frank")
    response = as_alice.post(members_url(vision_lab), {"username": "frank"}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "not_site_admin"
    changed = as_alice.patch(
        f"{members_url(vision_lab)}{Membership.objects.get(user=bob).pk}/",
        {"role": "member"},
        format="json",
    )
    assert changed.status_code == 403 and changed.json()["code"] == "not_lab_admin"


def test_other_labs_members_are_invisible(as_mallory, vision_lab, alice):
    assert as_mallory.get(members_url(vision_lab)).status_code == 404


def test_a_lab_keeps_its_last_admin(as_bob, vision_lab, bob):
    membership = Membership.objects.get(user=bob, lab=vision_lab)
    response = as_bob.delete(f"{members_url(vision_lab)}{membership.pk}/")
    assert response.status_code == 409 and response.json()["code"] == "last_lab_admin"


def test_adding_twice_is_a_conflict(as_carol, vision_lab, alice):
    response = as_carol.post(members_url(vision_lab), {"username": "alice"}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "already_member"


def test_unknown_username_names_the_field(as_carol, vision_lab):
    response = as_carol.post(members_url(vision_lab), {"username": "nobody"}, format="json")
    assert response.status_code == 400 and "username" in response.json()["extra"]["fields"]


@pytest.mark.security
def test_lab_admin_cannot_add_a_user_to_their_lab_without_consent(as_bob, vision_lab, bob):
    """Issue 11 item 16: adding someone to a lab shares their bookings, usage and name with it,
    so only a site admin adds directly (invitations the user accepts: issue 16)."""
    frank = UserFactory(username="frank")
    response = as_bob.post(members_url(vision_lab), {"username": "frank"}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "not_site_admin"
    assert not Membership.objects.filter(user=frank).exists()
    assert not AuditEvent.objects.filter(action="membership.add").exists()

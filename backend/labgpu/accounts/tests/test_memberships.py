import pytest

from labgpu.accounts.models import Membership
from labgpu.accounts.tests.factories import UserFactory
from labgpu.audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def members_url(lab):
    return f"/api/v1/labs/{lab.pk}/members/"


def test_lab_admin_adds_sets_limits_and_removes_a_member(as_bob, vision_lab, alice):
    UserFactory(username="frank")
    added = as_bob.post(
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
    assert response.status_code == 403 and response.json()["code"] == "not_lab_admin"


def test_other_labs_members_are_invisible(as_mallory, vision_lab, alice):
    assert as_mallory.get(members_url(vision_lab)).status_code == 404


def test_a_lab_keeps_its_last_admin(as_bob, vision_lab, bob):
    membership = Membership.objects.get(user=bob, lab=vision_lab)
    response = as_bob.delete(f"{members_url(vision_lab)}{membership.pk}/")
    assert response.status_code == 409 and response.json()["code"] == "last_lab_admin"


def test_adding_twice_is_a_conflict(as_bob, vision_lab, alice):
    response = as_bob.post(members_url(vision_lab), {"username": "alice"}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "already_member"


def test_unknown_username_names_the_field(as_bob, vision_lab):
    response = as_bob.post(members_url(vision_lab), {"username": "nobody"}, format="json")
    assert response.status_code == 400 and "username" in response.json()["extra"]["fields"]

"""Invariant I-10 over LDAP, against a real slapd (issue 22): a directory person whose uid is a
local site admin's username, or a case variant of a local username, gets an account of their
own; accounts are bound to the entry's entryUUID; a club group whose cn equals the site admins'
group grants nothing. Checked against the User / DirectoryAccount rows and the directory."""

import pytest

from labgpu.accounts.models import Membership, User
from labgpu.accounts.tests.factories import UserFactory
from labgpu.directory.models import DirectoryAccount
from labgpu.directory.tests.slapd import CLUBS, GROUPS, PASSWORDS, PEOPLE
from labgpu.directory.tests.test_ldap_login import spa_login
from labgpu.sso.models import GroupMapping

pytestmark = [pytest.mark.django_db, pytest.mark.slow, pytest.mark.security]


def test_I10_directory_uid_equal_to_a_local_site_admin_gets_a_new_account(ldap_on, carol):
    carol.email = "carol@labgpu.example"
    carol.save()

    client, response = spa_login("carol", PASSWORDS["carol"])

    assert response.status_code == 200, response.content
    stranger = User.objects.get(directory_account__dn=f"uid=carol,{PEOPLE}")
    assert stranger.pk != carol.pk
    assert response.json()["username"] == stranger.username == "carol-2"
    assert not stranger.is_staff and not stranger.is_superuser
    carol.refresh_from_db()
    assert carol.is_staff and carol.email == "carol@labgpu.example"
    assert not DirectoryAccount.objects.filter(user=carol).exists()
    assert client.get("/api/v1/me/").json()["username"] == "carol-2"


def test_I10_case_variant_uid_does_not_sign_in_as_the_local_account(ldap_on, alice):
    _, response = spa_login("Alice", PASSWORDS["Alice"])

    assert response.status_code == 200, response.content
    assert response.json()["username"] == "alice-2"
    assert not DirectoryAccount.objects.filter(user=alice).exists()
    # Signing in again, in any case, finds the stranger's own account by the entry.
    _, again = spa_login("alice", PASSWORDS["Alice"])
    assert again.json()["username"] == "alice-2"
    assert User.objects.filter(username__istartswith="alice").count() == 2


def test_I10_duplicate_case_variant_local_accounts_are_no_500(ldap_on):
    """`Carol` and `carol` both exist: django-auth-ldap's username__iexact raised
    MultipleObjectsReturned (a 500); the entry's identity finds neither."""
    UserFactory(username="Carol")
    UserFactory(username="carol", is_staff=True)

    _, response = spa_login("carol", PASSWORDS["carol"])

    assert response.status_code == 200, response.content
    assert response.json()["username"] == "carol-2"


def test_I10_account_is_bound_to_the_entry_uuid_not_the_name(ldap_on):
    spa_login("ada", PASSWORDS["ada"])
    account = DirectoryAccount.objects.get(user__username="ada")
    uuid = account.entry_uuid
    ldap_on.rename_person("ada", "ada.lovelace")

    _, renamed = spa_login("ada.lovelace", PASSWORDS["ada"])

    assert renamed.status_code == 200
    assert renamed.json()["username"] == "ada"  # the same account, found by entryUUID
    account.refresh_from_db()
    assert (account.entry_uuid, account.dn) == (uuid, f"uid=ada.lovelace,{PEOPLE}")
    assert account.login_name == "ada.lovelace"


def test_I10_club_group_whose_cn_equals_a_mapped_group_grants_nothing(
    settings, ldap_on, vision_lab
):
    settings.LABGPU_LDAP_SITE_ADMIN_GROUP_DNS = [f"cn=gpu-admins,{GROUPS}"]
    GroupMapping.objects.create(group=f"cn=gpu-admins,{GROUPS}", lab=vision_lab, role="lab_admin")
    # A row by cn written straight into the database (as before issue 22) maps nothing.
    GroupMapping.objects.create(group="gpu-admins", lab=vision_lab, role="member")

    spa_login("carol", PASSWORDS["carol"])  # member of cn=gpu-admins,ou=clubs only
    spa_login("grace", PASSWORDS["grace"])  # member of cn=gpu-admins,ou=groups

    stranger = User.objects.get(directory_account__dn=f"uid=carol,{PEOPLE}")
    assert f"cn=gpu-admins,{CLUBS}" in stranger.directory_account.groups
    assert not stranger.is_staff
    assert not Membership.objects.filter(user=stranger).exists()
    grace = User.objects.get(username="grace")
    assert grace.is_staff
    assert Membership.objects.get(user=grace, lab=vision_lab).role == "lab_admin"


def test_I10_a_flagged_name_link_to_a_site_admin_signs_nobody_in_until_confirmed(ldap_on, carol):
    """A link made by username before issue 22 to a site admin's account is suspended."""
    from labgpu.core.timeutils import now

    DirectoryAccount.objects.create(
        user=carol,
        directory=ldap_on.uri,
        dn=f"uid=carol,{PEOPLE}",
        link_method="username",
        last_synced_at=now(),
    )

    _, refused = spa_login("carol", PASSWORDS["carol"])
    DirectoryAccount.objects.filter(user=carol).update(confirmed_at=now())
    _, confirmed = spa_login("carol", PASSWORDS["carol"])

    assert refused.status_code == 401
    assert confirmed.status_code == 200 and confirmed.json()["username"] == "carol"


def test_I10_a_signed_in_person_links_their_directory_entry_by_proving_it(ldap_on, carol, alice):
    from conftest import client_for

    wrong = client_for(carol).post(
        "/api/v1/me/identities/ldap/", {"username": "carol", "password": "guess"}, format="json"
    )
    linked = client_for(carol).post(
        "/api/v1/me/identities/ldap/",
        {"username": "carol", "password": PASSWORDS["carol"]},
        format="json",
    )
    taken = client_for(alice).post(
        "/api/v1/me/identities/ldap/",
        {"username": "carol", "password": PASSWORDS["carol"]},
        format="json",
    )
    _, signed_in = spa_login("carol", PASSWORDS["carol"])

    assert wrong.status_code == 400 and wrong.json()["code"] == "invalid_credentials"
    assert linked.status_code == 201, linked.content
    assert linked.json()["identifier"] == f"uid=carol,{PEOPLE}"
    account = DirectoryAccount.objects.get(user=carol)
    assert (account.link_method, account.confirmed_by) == ("user", carol)
    assert account.entry_uuid
    assert taken.status_code == 409 and taken.json()["code"] == "identity_taken"
    assert signed_in.json()["username"] == "carol"  # her own proof, not her name, linked it
    listed = client_for(carol).get("/api/v1/me/identities/").json()
    assert listed["identities"][0]["kind"] == "ldap" and listed["ldap_link"] is False

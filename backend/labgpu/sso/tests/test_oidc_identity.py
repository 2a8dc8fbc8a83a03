"""Invariant I-10 over OIDC, against the real OpenID Provider issuing hostile claims (issue 22):
nobody signs in as a local account by username, case or look-alike variant or e-mail; usernames
the provider proposes are safe and free; groups are an exact list of one issuer; a NUL in a
claim and an ID token without `kid` are no 500. Checked against User / OidcIdentity rows."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from labgpu.accounts.models import Membership, User
from labgpu.accounts.tests.factories import LabFactory, UserFactory
from labgpu.sso.models import GroupMapping, OidcIdentity
from labgpu.sso.tests.conftest import use_provider
from labgpu.sso.tests.op_server import walk_sign_in
from labgpu.sso.tests.test_oidc import sign_in, signed_in_as

pytestmark = [pytest.mark.django_db, pytest.mark.slow, pytest.mark.security]

SAFE_USERNAME = re.compile(r"^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$")


@pytest.fixture
def local_carol(carol):
    carol.email = carol.verified_email = "carol@labgpu.example"
    carol.save()
    return carol


@pytest.fixture
def local_alice(alice):
    alice.email = alice.verified_email = "alice@labgpu.example"
    alice.save()
    return alice


def test_I10_a_local_site_admins_username_creates_a_new_account(oidc_on, settings, local_carol):
    settings.LABGPU_OIDC_SITE_ADMIN_GROUPS = ["it-staff"]
    client = Client()

    answer = sign_in(client, "stranger-carol")

    assert answer.status_code == 302 and answer["Location"] == "/"
    stranger = OidcIdentity.objects.get(subject="stranger-carol").user
    assert stranger.pk != local_carol.pk
    assert signed_in_as(client) == stranger.username == "carol-2"
    # "it-staff" as a plain string, not a list, grants nothing; the unverified e-mail is not kept.
    assert not stranger.is_staff and stranger.email == ""
    local_carol.refresh_from_db()
    assert local_carol.email == "carol@labgpu.example" and local_carol.is_staff
    assert not OidcIdentity.objects.filter(user=local_carol).exists()


def test_I10_a_verified_email_never_adopts_a_site_admin(oidc_on, settings, local_carol):
    settings.LABGPU_OIDC_ADOPT_VERIFIED_EMAIL_DOMAINS = ["labgpu.example"]
    settings.LABGPU_OIDC_SITE_ADMIN_GROUPS = ["it-staff"]

    sign_in(Client(), "verified-carol")

    stranger = OidcIdentity.objects.get(subject="verified-carol").user
    assert stranger.pk != local_carol.pk and stranger.username == "carol.v"
    assert not stranger.is_staff  # ["IT-STAFF"] is not "it-staff"
    assert not OidcIdentity.objects.filter(user=local_carol).exists()


def test_I10_a_verified_email_adopts_nobody_unless_enabled_for_its_domain(
    oidc_on, settings, local_alice
):
    settings.LABGPU_OIDC_ADOPT_VERIFIED_EMAIL_DOMAINS = ["uni.example"]  # not labgpu.example

    sign_in(Client(), "verified-alice")

    assert OidcIdentity.objects.get(subject="verified-alice").user.username == "alice.uni"
    assert not OidcIdentity.objects.filter(user=local_alice).exists()


def test_I10_a_verified_email_in_an_enabled_domain_adopts_the_account(
    oidc_on, settings, local_alice
):
    settings.LABGPU_OIDC_ADOPT_VERIFIED_EMAIL_DOMAINS = ["labgpu.example"]
    client = Client()

    sign_in(client, "verified-alice")

    assert signed_in_as(client) == "alice"
    identity = OidcIdentity.objects.get(subject="verified-alice")
    assert (identity.user_id, identity.link_method) == (local_alice.pk, "verified_email")


def test_I10_an_address_the_local_account_never_verified_is_not_adopted(oidc_on, settings, alice):
    alice.email = "alice@labgpu.example"  # typed into the profile, never verified
    alice.save()
    settings.LABGPU_OIDC_ADOPT_VERIFIED_EMAIL_DOMAINS = ["labgpu.example"]

    sign_in(Client(), "verified-alice")

    assert OidcIdentity.objects.get(subject="verified-alice").user.username == "alice.uni"


def test_I10_email_verified_as_a_string_adopts_nothing(oidc_on, settings, local_alice):
    settings.LABGPU_OIDC_ADOPT_VERIFIED_EMAIL_DOMAINS = ["labgpu.example"]

    sign_in(Client(), "unverified-alice")

    stranger = OidcIdentity.objects.get(subject="unverified-alice").user
    assert stranger.pk != local_alice.pk and stranger.username == "alice-2"
    local_alice.refresh_from_db()
    assert local_alice.email == "alice@labgpu.example"


@pytest.mark.parametrize(
    ("login", "expected"),
    [
        ("cyrillic-carol", "arol"),  # Cyrillic с has no place in the safe set
        ("confusable-carol", "caro1-2"),  # looks like carol
        ("markup", "b-x-b-hyperlink-http-evil"),
    ],
)
def test_provider_usernames_are_safe_free_and_never_look_like_another(
    oidc_on, local_carol, login, expected
):
    client = Client()

    answer = sign_in(client, login)

    assert answer.status_code == 302
    user = OidcIdentity.objects.get(subject=login).user
    assert user.username == expected and SAFE_USERNAME.match(user.username)
    assert signed_in_as(client) == expected


def test_a_nul_in_claims_is_no_500_and_names_nothing(oidc_on):
    vision = LabFactory(slug="vision")
    GroupMapping.objects.create(
        source="oidc", issuer=oidc_on.issuer, group="vision-members", lab=vision, role="member"
    )
    client = Client()

    answer = sign_in(client, "nul")

    assert answer.status_code == 302 and answer["Location"] == "/"
    user = User.objects.get(oidc_identities__subject="nul")
    assert (user.username, user.first_name, user.email) == ("nul", "", "")
    assert Membership.objects.get(user=user).lab == vision


def test_groups_of_another_issuer_grant_nothing(oidc_on):
    vision = LabFactory(slug="vision")
    GroupMapping.objects.create(
        source="oidc", issuer="https://other.example", group="vision-members", lab=vision
    )

    sign_in(Client(), "dana")

    assert not Membership.objects.filter(user__username="dana").exists()


def test_an_id_token_without_kid_is_verified_with_the_single_key(settings, kidless_provider):
    use_provider(settings, kidless_provider)
    client = Client()

    answer = sign_in(client, "dana")

    assert answer["Location"] == "/"
    assert signed_in_as(client) == "dana"


def test_an_id_token_without_kid_is_refused_when_several_keys_could_sign_it(
    settings, kidless_two_keys_provider
):
    use_provider(settings, kidless_two_keys_provider)
    client = Client()

    answer = sign_in(client, "dana")

    assert answer["Location"] == "/login?sso_error=1"
    assert signed_in_as(client) is None


def test_I10_a_signed_in_person_links_the_identity_from_their_profile(oidc_on, local_alice):
    client = Client()
    client.force_login(local_alice)
    start = client.get("/oidc/login/", {"next": "/account?linked=1", "link": "1"})
    callback = urlsplit(walk_sign_in(start["Location"], "verified-alice"))

    answer = client.get(callback.path, parse_qs(callback.query))

    assert answer["Location"] == "/account?linked=1"
    identity = OidcIdentity.objects.get(subject="verified-alice")
    assert (identity.user_id, identity.link_method) == (local_alice.pk, "user")
    local_alice.refresh_from_db()
    assert local_alice.email == "alice@labgpu.example"
    # From now on the identity signs in as alice, from any browser.
    again = Client()
    sign_in(again, "verified-alice")
    assert signed_in_as(again) == "alice"


def test_I10_a_site_admin_pre_links_an_identity(oidc_on, bob):
    OidcIdentity.objects.create(
        user=bob, issuer=oidc_on.issuer, subject="erin", link_method="admin"
    )
    client = Client()

    sign_in(client, "erin")

    assert signed_in_as(client) == "bob"
    assert not User.objects.filter(username="erin").exists()


def test_I10_a_flagged_name_link_to_a_site_admin_signs_in_only_once_confirmed(oidc_on, carol):
    OidcIdentity.objects.create(
        user=carol, issuer=oidc_on.issuer, subject="stranger-carol", link_method="username"
    )
    refused = Client()
    assert sign_in(refused, "stranger-carol")["Location"] == "/login?sso_error=1"
    assert signed_in_as(refused) is None

    OidcIdentity.objects.filter(user=carol).update(confirmed_at=carol.date_joined)
    confirmed = Client()
    sign_in(confirmed, "stranger-carol")
    assert signed_in_as(confirmed) == "carol"


def test_the_stranger_gets_a_variant_even_with_case_variant_local_accounts(oidc_on):
    UserFactory(username="Carol")
    UserFactory(username="carol", is_staff=True)

    sign_in(Client(), "stranger-carol")

    assert OidcIdentity.objects.get(subject="stranger-carol").user.username == "carol-2"

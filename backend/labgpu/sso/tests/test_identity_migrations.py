"""Migrations sso 0003 and directory 0002 (issue 22) on a database holding what the old code made:
links taken over by username are flagged for review, links the sign-in created are not, and group
mappings by cn or for site admin are switched off with the reason. Rows are written with the
historical models of the schema before, read with those of the schema after."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("sso", "0002_oidcidentity"), ("directory", "0001_initial"), ("audit", "0001_initial")]
AFTER = [
    ("sso", "0003_identity_links_and_unambiguous_groups"),
    ("directory", "0002_identity_links"),
]

pytestmark = [pytest.mark.security, pytest.mark.slow]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def before(transactional_db):
    apps = migrate(BEFORE)
    yield apps
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_I10_migrations_flag_links_made_by_name_and_switch_off_ambiguous_mappings(before, settings):
    settings.LABGPU_OIDC_ISSUER = "https://idp.example"
    settings.AUTH_LDAP_SERVER_URI = "ldap://dir.example"
    # accounts stays at its latest schema: today's models write its rows.
    from labgpu.accounts.models import Lab, User

    OidcIdentity = before.get_model("sso", "OidcIdentity")
    GroupMapping = before.get_model("sso", "GroupMapping")
    DirectoryAccount = before.get_model("directory", "DirectoryAccount")
    AuditEvent = before.get_model("audit", "AuditEvent")
    moment = timezone.now()
    carol = User.objects.create(username="carol", password="pbkdf2_sha256$x", is_staff=True)
    User.objects.filter(pk=carol.pk).update(date_joined=moment - timedelta(days=90))
    dana = User.objects.create(username="dana", password="!unusable")
    alice = User.objects.create(username="alice", password="pbkdf2_sha256$y")
    erin = User.objects.create(username="erin", password="!unusable")
    # The old oidc_user_upsert: carol's account taken over by username, dana's created.
    OidcIdentity.objects.create(user_id=carol.pk, issuer="https://idp.example", subject="s-carol")
    AuditEvent.objects.create(action="user.sso_link", target_type="user", target_id=str(carol.pk))
    OidcIdentity.objects.create(user_id=dana.pk, issuer="https://idp.example", subject="s-dana")
    AuditEvent.objects.create(action="user.sso_create", target_type="user", target_id=str(dana.pk))
    # The old LDAP sign-in: alice (a local password) matched by uid, erin created by it.
    DirectoryAccount.objects.create(
        user_id=alice.pk, dn="uid=alice,ou=people", last_synced_at=moment
    )
    DirectoryAccount.objects.create(user_id=erin.pk, dn="uid=erin,ou=people", last_synced_at=moment)
    lab = Lab.objects.create(name="Vision", slug="vision")
    GroupMapping.objects.create(group="cn=vision,ou=groups,dc=uni", lab_id=lab.pk, role="member")
    GroupMapping.objects.create(group="gpu-admins", lab_id=lab.pk, role="lab_admin")
    GroupMapping.objects.create(group="CN=GPU-Admins,OU=Groups", role="site_admin")

    after = migrate(AFTER)

    links = after.get_model("sso", "OidcIdentity").objects
    assert links.get(subject="s-carol").link_method == "username"
    assert links.get(subject="s-dana").link_method == "created"
    accounts = after.get_model("directory", "DirectoryAccount").objects
    assert accounts.get(user_id=alice.pk).link_method == "username"
    erin_account = accounts.get(user_id=erin.pk)
    assert erin_account.link_method == "created"
    assert (erin_account.directory, erin_account.login_name) == ("ldap://dir.example", "erin")
    mappings = {m.group: m for m in after.get_model("sso", "GroupMapping").objects.all()}
    assert (
        mappings["cn=vision,ou=groups,dc=uni"].source,
        mappings["cn=vision,ou=groups,dc=uni"].active,
    ) == ("ldap", True)
    assert not mappings["gpu-admins"].active and "cn" in mappings["gpu-admins"].inactive_reason
    site_admin = mappings["CN=GPU-Admins,OU=Groups"]
    assert not site_admin.active and "environment" in site_admin.inactive_reason

"""LDAP bind sign-in against a real slapd (issue 16 item 2): the SPA's session login and the admin
login both go through it; the directory's names, e-mail and groups reach LabGPU."""

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from rest_framework.test import APIClient

from config.ldap import LDAP_BACKEND, ldap_settings
from labgpu.accounts.models import User
from labgpu.accounts.tests.factories import UserFactory
from labgpu.core.timeutils import now
from labgpu.directory.models import DirectoryAccount
from labgpu.directory.tests.slapd import GROUPS, PASSWORDS, PEOPLE

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def spa_login(username: str, password: str) -> tuple[APIClient, object]:
    client = APIClient(enforce_csrf_checks=True)
    client.get("/api/v1/auth/csrf/")
    response = client.post(
        "/api/v1/auth/login/",
        {"username": username, "password": password},
        HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value,
    )
    return client, response


def test_directory_password_signs_in_to_the_spa_with_mapped_attributes_and_groups(ldap_on):
    client, response = spa_login("ada", PASSWORDS["ada"])

    assert response.status_code == 200, response.content
    assert response.json()["username"] == "ada"
    assert client.get("/api/v1/me/").json()["email"] == "ada@uni.example"
    user = User.objects.get(username="ada")
    assert (user.first_name, user.last_name, user.email) == ("Ada", "Lovelace", "ada@uni.example")
    assert not user.has_usable_password()  # the directory holds the password, LabGPU none
    account = DirectoryAccount.objects.get(user=user)
    assert account.dn == f"uid=ada,{PEOPLE}"
    # Groups by full DN only: a cn names no group unambiguously (issue 22 item 3).
    assert set(account.groups) == {f"cn=vision-lab,{GROUPS}", f"cn=language-lab,{GROUPS}"}
    assert account.entry_uuid and account.link_method == "created"


def test_wrong_directory_password_is_refused(ldap_on):
    _, response = spa_login("ada", "not-her-password")

    assert response.status_code == 401
    assert response.json()["code"] == "invalid_credentials"
    assert not User.objects.filter(username="ada").exists()


def test_unknown_user_is_refused_like_a_wrong_password(ldap_on):
    _, response = spa_login("charles", "babbage")

    assert response.status_code == 401
    assert response.json()["code"] == "invalid_credentials"
    assert not User.objects.filter(username="charles").exists()


def test_site_admin_signs_in_to_django_admin_with_the_directory_password(ldap_on):
    """A site admin pre-linked her local account to her directory entry (rule b of I-10)."""
    grace = UserFactory(
        username="grace",
        email="grace@labgpu.example",
        is_staff=True,
        is_superuser=True,
        password="local-only-pw-1",
    )
    DirectoryAccount.objects.create(
        user=grace,
        directory=ldap_on.uri,
        dn=f"uid=grace,{PEOPLE}",
        link_method="admin",
        last_synced_at=now(),
    )
    client = Client(enforce_csrf_checks=True)
    client.get("/admin/login/")
    response = client.post(
        "/admin/login/?next=/admin/",
        {
            "username": "grace",
            "password": PASSWORDS["grace"],
            "csrfmiddlewaretoken": client.cookies["csrftoken"].value,
            "next": "/admin/",
        },
    )

    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200
    # A linked account keeps its own address; the DN-linked row is now bound to the entryUUID.
    assert User.objects.get(username="grace").email == "grace@labgpu.example"
    assert DirectoryAccount.objects.get(user=grace).entry_uuid


def test_group_changes_in_the_directory_show_at_the_next_sign_in(ldap_on):
    spa_login("ada", PASSWORDS["ada"])
    ldap_on.remove_member("language-lab", "ada")

    _, response = spa_login("ada", PASSWORDS["ada"])

    assert response.status_code == 200
    account = DirectoryAccount.objects.get(user__username="ada")
    assert f"cn=language-lab,{GROUPS}" not in account.groups
    assert f"cn=vision-lab,{GROUPS}" in account.groups


def test_user_a_site_admin_deactivated_stays_out_whatever_the_directory_says(ldap_on):
    spa_login("ada", PASSWORDS["ada"])
    User.objects.filter(username="ada").update(is_active=False)

    _, response = spa_login("ada", PASSWORDS["ada"])

    assert response.status_code == 401
    assert not User.objects.get(username="ada").is_active
    assert User.objects.filter(username__startswith="ada").count() == 1


def test_local_accounts_still_sign_in_beside_the_directory(ldap_on, alice):
    _, response = spa_login("alice", "correct horse battery staple")

    assert response.status_code == 200
    assert not DirectoryAccount.objects.filter(user=alice).exists()


def test_a_refused_service_account_refuses_sign_in_without_an_error(settings, ldap_on):
    settings.AUTH_LDAP_BIND_PASSWORD = "rotated-and-forgotten"

    _, response = spa_login("ada", PASSWORDS["ada"])

    assert response.status_code == 401


def test_ldap_is_off_without_a_server_and_refuses_half_a_configuration():
    assert ldap_settings({}) == {}
    with pytest.raises(ImproperlyConfigured, match="LABGPU_LDAP_USER_SEARCH_BASE"):
        ldap_settings({"LABGPU_LDAP_SERVER_URI": "ldap://127.0.0.1:1/"})
    with pytest.raises(ImproperlyConfigured, match="LABGPU_LDAP_GROUP_TYPE"):
        ldap_settings(
            {
                "LABGPU_LDAP_SERVER_URI": "ldap://127.0.0.1:1/",
                "LABGPU_LDAP_USER_DN_TEMPLATE": "uid=%(user)s,ou=people,dc=x",
                "LABGPU_LDAP_GROUP_SEARCH_BASE": "ou=groups,dc=x",
                "LABGPU_LDAP_GROUP_TYPE": "mystery",
            }
        )


def test_settings_from_the_environment_put_the_directory_before_local_passwords():
    """The real settings module, as production imports it: LABGPU_LDAP_* → the LDAP backend first
    (a later assignment of AUTHENTICATION_BACKENDS must not drop it)."""
    env = {
        **os.environ,
        "LABGPU_LDAP_SERVER_URI": "ldap://127.0.0.1:1/",
        "LABGPU_LDAP_USER_SEARCH_BASE": PEOPLE,
        "LABGPU_LDAP_GROUP_SEARCH_BASE": GROUPS,
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    script = (
        "import json; from django.conf import settings as s; print(json.dumps("
        "[s.AUTHENTICATION_BACKENDS, s.AUTH_LDAP_SERVER_URI, s.AUTH_LDAP_USER_SEARCH.base_dn]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=django_settings.BASE_DIR,
        capture_output=True,
        text=True,
        check=True,
    )
    backends, uri, base = json.loads(out.stdout.strip().splitlines()[-1])
    assert backends[0] == LDAP_BACKEND and len(backends) > 1
    assert (uri, base) == ("ldap://127.0.0.1:1/", PEOPLE)


def test_directory_sign_in_works_with_local_passwords_turned_off(settings, ldap_on, alice):
    settings.LABGPU_LOCAL_LOGIN_ENABLED = False

    _, directory = spa_login("ada", PASSWORDS["ada"])
    _, local = spa_login("alice", "correct horse battery staple")

    assert directory.status_code == 200
    assert local.status_code == 401

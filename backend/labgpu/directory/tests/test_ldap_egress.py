"""The LDAP server's address goes through the one egress policy (labgpu.egress.POLICY): resolved
once, and for plain ldap:// the checked address is what libldap connects to (issue 22, item 5)."""

import pytest

from labgpu.directory.tests.slapd import PASSWORDS
from labgpu.directory.tests.test_ldap_login import spa_login

pytestmark = [pytest.mark.django_db, pytest.mark.security]


def test_the_directory_is_reached_at_the_address_the_policy_resolved(settings, slapd, hostile_dns):
    from config.ldap import LDAP_BACKEND, ldap_settings

    port = slapd.uri.rstrip("/").rsplit(":", 1)[1]
    # A name only the policy's resolver knows: libldap could not find it on its own.
    hostile_dns.answers["directory.example"] = ["127.0.0.1"]
    environ = slapd.environ(LABGPU_LDAP_SERVER_URI=f"ldap://directory.example:{port}/")
    for name, value in ldap_settings(environ).items():
        setattr(settings, name, value)
    settings.AUTHENTICATION_BACKENDS = [LDAP_BACKEND, *settings.AUTHENTICATION_BACKENDS]
    assert f"ldap://directory.example:{port}/" == settings.AUTH_LDAP_SERVER_URI

    _, response = spa_login("ada", PASSWORDS["ada"])

    assert response.status_code == 200, response.content
    assert "directory.example" in hostile_dns.calls

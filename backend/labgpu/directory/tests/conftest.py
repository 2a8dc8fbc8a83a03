import os

import pytest
from django.core.cache import cache

from config.ldap import LDAP_BACKEND, ldap_settings
from labgpu.directory.tests.slapd import Slapd, running_slapd, slapd_path


@pytest.fixture(autouse=True)
def fresh_login_limits(settings):
    """Each test signs in several times: the login limits (cached per address) start afresh."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def slapd(tmp_path) -> Slapd:
    if slapd_path() is None:
        reason = "slapd is not installed (Debian package slapd; .ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    with running_slapd(tmp_path / "slapd") as server:
        yield server


@pytest.fixture
def ldap_on(settings, slapd) -> Slapd:
    """LabGPU configured for the test directory exactly as LABGPU_LDAP_* would configure it."""
    for name, value in ldap_settings(slapd.environ()).items():
        setattr(settings, name, value)
    settings.AUTHENTICATION_BACKENDS = [LDAP_BACKEND, *settings.AUTHENTICATION_BACKENDS]
    return slapd

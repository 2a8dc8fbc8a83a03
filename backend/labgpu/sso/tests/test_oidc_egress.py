"""OpenID Provider calls go through the one egress policy (labgpu.egress.POLICY): discovery, JWKS,
token and UserInfo. The configured issuer's origin may be internal (the operator chose it); an
endpoint elsewhere that resolves inside is refused (issue 22, item 5)."""

import pytest

from labgpu.accounts.models import User
from labgpu.sso.discovery import DiscoveryError, forget_metadata, provider_metadata
from labgpu.sso.tests.test_oidc import sign_in, signed_in_as

pytestmark = [pytest.mark.django_db, pytest.mark.security, pytest.mark.slow]


def test_discovery_resolves_the_issuer_through_the_policy(settings, hostile_dns):
    settings.LABGPU_OIDC_ISSUER = "https://idp.example"
    hostile_dns.answers["idp.example"] = ["127.0.0.1"]  # nothing listens on 443 there
    forget_metadata()
    with pytest.raises(DiscoveryError):
        provider_metadata()
    forget_metadata()
    assert hostile_dns.calls == ["idp.example"]


@pytest.mark.parametrize(
    "endpoint",
    ["OIDC_OP_JWKS_ENDPOINT", "OIDC_OP_TOKEN_ENDPOINT", "OIDC_OP_USER_ENDPOINT"],
)
def test_an_endpoint_named_inside_the_network_is_refused(oidc_on, settings, caplog, endpoint):
    # An explicit setting wins over discovery, as a hostile discovery document's field would.
    setattr(settings, endpoint, "http://169.254.169.254/latest/meta-data/")
    from django.test import Client

    client = Client()
    sign_in(client, "dana")
    assert signed_in_as(client) is None
    assert not User.objects.filter(username="dana").exists()
    assert "169.254.169.254 is refused" in caplog.text

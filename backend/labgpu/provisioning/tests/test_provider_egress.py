"""The provider driver's HTTP goes through the one egress policy (labgpu.egress.POLICY): the API's
name is resolved once and checked, the checked address connected to (issue 22, item 5)."""

import pytest

from labgpu.catalog.tests.factories import ProviderAccountFactory
from labgpu.providers import ProviderPermanentError
from labgpu.provisioning.drivers import driver_for

pytestmark = pytest.mark.security


def test_the_provider_api_resolving_inside_is_refused_before_any_request(
    db, hostile_dns, monkeypatch
):
    # DigitalOcean's name answered with a loopback address (a poisoned resolver): never reached.
    hostile_dns.answers["api.digitalocean.com"] = ["::ffff:127.0.0.1"]
    monkeypatch.setenv("LABGPU_PROVIDER_TOKEN_DO", "dop_v1_secret")
    account = ProviderAccountFactory(
        name="DigitalOcean",
        kind="digitalocean",
        api_base_url="https://api.digitalocean.com",
        token_env_var="LABGPU_PROVIDER_TOKEN_DO",
    )
    driver = driver_for(account)
    with pytest.raises(ProviderPermanentError, match="refused"):
        driver.sizes()
    assert hostile_dns.calls == ["api.digitalocean.com"]

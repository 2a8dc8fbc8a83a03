import pytest

from labgpu.sso.discovery import forget_metadata
from labgpu.sso.tests.op_server import CLIENT_ID, CLIENT_SECRET, RP_ORIGIN, start_op


@pytest.fixture(scope="session")
def openid_provider():
    yield from start_op(rp_origins=[RP_ORIGIN])


@pytest.fixture(scope="session")
def kidless_provider():
    """The same OP issuing ID tokens without `kid`, one signing key in its JWKS."""
    yield from start_op(rp_origins=[RP_ORIGIN], omitKid=True)


@pytest.fixture(scope="session")
def kidless_two_keys_provider():
    """ID tokens without `kid` and two RS256 keys published: no key can be chosen."""
    yield from start_op(rp_origins=[RP_ORIGIN], omitKid=True, signingKeys=2)


def use_provider(settings, provider) -> None:
    """LabGPU configured for a test OP, as the environment would configure it."""
    settings.LABGPU_OIDC_ISSUER = provider.issuer
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.LABGPU_OIDC_ENABLED = True
    settings.LABGPU_OIDC_NAME = "Test University"
    settings.OIDC_RP_SCOPES = "openid email profile groups"
    settings.LABGPU_OIDC_GROUPS_CLAIM = "groups"
    forget_metadata()


@pytest.fixture
def oidc_on(settings, openid_provider):
    use_provider(settings, openid_provider)
    yield openid_provider
    forget_metadata()

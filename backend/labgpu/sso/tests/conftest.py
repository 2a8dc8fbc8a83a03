import pytest

from labgpu.sso.discovery import forget_metadata
from labgpu.sso.tests.op_server import CLIENT_ID, CLIENT_SECRET, RP_ORIGIN, start_op


@pytest.fixture(scope="session")
def openid_provider():
    yield from start_op(rp_origins=[RP_ORIGIN])


@pytest.fixture
def oidc_on(settings, openid_provider):
    """LabGPU configured for the test OP, as the environment would configure it."""
    settings.LABGPU_OIDC_ISSUER = openid_provider.issuer
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.LABGPU_OIDC_ENABLED = True
    settings.LABGPU_OIDC_NAME = "Test University"
    settings.OIDC_RP_SCOPES = "openid email profile groups"
    settings.LABGPU_OIDC_GROUPS_CLAIM = "groups"
    forget_metadata()
    yield openid_provider
    forget_metadata()

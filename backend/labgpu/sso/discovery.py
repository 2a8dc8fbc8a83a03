"""OpenID Provider discovery (OpenID Connect Discovery 1.0), which mozilla-django-oidc lacks: it
reads each endpoint from a setting. LabGPU takes only the issuer and fetches
`<issuer>/.well-known/openid-configuration` at the first sign-in, then once an hour per process.
"""

import logging
import threading
import time
from typing import Any

from django.conf import settings
from mozilla_django_oidc.utils import import_from_settings

from labgpu.sso import http

logger = logging.getLogger(__name__)

METADATA_TTL_S = 3600
# mozilla-django-oidc's setting → the discovery document's field. An explicit setting still wins
# (for a provider without discovery).
ENDPOINT_SETTINGS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
_REQUIRED = ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri")

_lock = threading.Lock()
_cache: dict[str, tuple[float, dict[str, Any]]] = {}


class DiscoveryError(Exception):
    """The provider's discovery document could not be fetched or is not for this issuer."""


def provider_metadata() -> dict[str, Any]:
    issuer = settings.LABGPU_OIDC_ISSUER
    with _lock:
        cached = _cache.get(issuer)
        if cached and cached[0] > time.monotonic():
            return cached[1]
    url = f"{issuer.rstrip('/')}/.well-known/openid-configuration"
    try:
        response = http.get(url)
        response.raise_for_status()
        document = response.json()
    except (*http.ERRORS, ValueError) as failure:
        raise DiscoveryError(f"could not read {url}: {failure}") from failure
    if not isinstance(document, dict) or any(not document.get(key) for key in _REQUIRED):
        raise DiscoveryError(f"{url} lacks one of {', '.join(_REQUIRED)}")
    # Discovery §4.3: the document's issuer must be the one we asked; ID tokens are checked
    # against it exactly.
    if document["issuer"].rstrip("/") != issuer.rstrip("/"):
        raise DiscoveryError(f"{url} names issuer {document['issuer']!r}, not {issuer!r}")
    with _lock:
        _cache[issuer] = (time.monotonic() + METADATA_TTL_S, document)
    logger.info("OIDC discovery: read %s", url)
    return document


def forget_metadata() -> None:
    with _lock:
        _cache.clear()


def oidc_setting(attr: str, *default: Any) -> Any:
    """mozilla-django-oidc's `get_settings`, with the provider's endpoints from discovery."""
    if attr in ENDPOINT_SETTINGS and not getattr(settings, attr, None):
        return provider_metadata().get(ENDPOINT_SETTINGS[attr]) or (default[0] if default else None)
    return import_from_settings(attr, *default)

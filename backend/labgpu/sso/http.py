"""The OpenID Provider's HTTP (discovery, JWKS, token, UserInfo) through the one egress policy
(labgpu.egress): each endpoint's host resolved once and checked, the checked address connected
to, no redirect followed. The configured issuer's origin is the operator's own choice and may be
internal (an on-campus IdP); an endpoint the discovery document names elsewhere must be public."""

from typing import Any

import httpx
from django.conf import settings

from labgpu import egress

#: What a failed provider call raises.
ERRORS = (httpx.HTTPError, egress.EgressRefused)


def exemptions() -> egress.Exemptions:
    return egress.Exemptions(origins=egress.origins_of([settings.LABGPU_OIDC_ISSUER]))


def request(method: str, url: str, **options: Any) -> httpx.Response:
    with egress.POLICY.client(
        exemptions(), timeout=settings.OIDC_TIMEOUT, verify=settings.OIDC_VERIFY_SSL
    ) as client:
        return client.request(method, url, **options)


def get(url: str, **options: Any) -> httpx.Response:
    return request("GET", url, **options)


def post(url: str, **options: Any) -> httpx.Response:
    return request("POST", url, **options)

"""Which secrets a provider account may use, and where it may send them (docs/security.md).

A `ProviderAccount` names the environment variable holding its token and the API's base URL. Both
are site-admin input, and together they decide which of the server's secrets leaves for which
host, so both are restricted:

- the variable's name must start with `LABGPU_PROVIDER_TOKEN_`, so no other secret of the server
  (`DJANGO_SECRET_KEY`, `DATABASE_URL`, …) can ever be read as a token, nor probed for existence;
- the base URL must be DigitalOcean's API, or one of the origins the operator lists in the
  setting/env `LABGPU_PROVIDER_ALLOWED_BASE_URLS` (comma-separated; an entry without a port allows
  every port of its host — e.g. `http://127.0.0.1` for the emulator on loopback).

The rules are checked when an account is saved (model, admin, API) and again each time a driver
is built, so a row written before the rules existed cannot send a secret anywhere.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from urllib.parse import SplitResult, urlsplit

import httpx

from labgpu import egress

TOKEN_ENV_PREFIX = "LABGPU_PROVIDER_TOKEN_"
TOKEN_ENV_NAME = re.compile(r"^LABGPU_PROVIDER_TOKEN_[A-Z0-9_]{1,60}$")
DIGITALOCEAN_API_URL = "https://api.digitalocean.com"
ALLOWED_BASE_URLS_SETTING = "LABGPU_PROVIDER_ALLOWED_BASE_URLS"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def token_env_var_allowed(name: str) -> bool:
    return bool(TOKEN_ENV_NAME.match(name or ""))


def token_env_var_problem(name: str) -> str | None:
    """Why `name` may not hold a provider token, or None when it may."""
    if token_env_var_allowed(name):
        return None
    return (
        f"Name an environment variable starting with {TOKEN_ENV_PREFIX} "
        f"(e.g. {TOKEN_ENV_PREFIX}DIGITALOCEAN); other variables are never read."
    )


def configured_allowed_base_urls() -> list[str]:
    """The operator's extra origins: Django's setting when configured, else the environment."""
    try:
        from django.conf import settings

        value = getattr(settings, ALLOWED_BASE_URLS_SETTING, None)
    except Exception:  # Django missing or not configured: the environment alone
        value = None
    if value is None:
        value = os.environ.get(ALLOWED_BASE_URLS_SETTING, "")
    if isinstance(value, str):
        value = value.split(",")
    return [item.strip() for item in value if item and item.strip()]


def _origin(url: str) -> SplitResult | None:
    """The URL split, when it is a bare http(s) origin (no credentials, path, query, fragment)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    if parts.username is not None or parts.password is not None:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    return parts


def _same_origin(candidate: SplitResult, permitted: SplitResult | None, *, any_port: bool) -> bool:
    if permitted is None:
        return False
    if (candidate.scheme, candidate.hostname) != (permitted.scheme, permitted.hostname):
        return False
    default = _DEFAULT_PORTS[candidate.scheme]
    return any_port or (candidate.port or default) == (permitted.port or default)


def base_url_problem(url: str, allowed: Iterable[str] | None = None) -> str | None:
    """Why a provider token may not be sent to `url`, or None when it may."""
    candidate = _origin(url)
    if candidate is None:
        return "Give the API's origin only: https://host[:port], without a path or credentials."
    extra = configured_allowed_base_urls() if allowed is None else list(allowed)
    if _same_origin(candidate, _origin(DIGITALOCEAN_API_URL), any_port=False):
        return None
    for entry in extra:
        # An operator's entry without a port allows every port of its host (the emulator's).
        permitted = _origin(entry)
        if permitted and _same_origin(candidate, permitted, any_port=permitted.port is None):
            return None
    return (
        f"Only {DIGITALOCEAN_API_URL} is allowed unless {ALLOWED_BASE_URLS_SETTING} "
        "lists this origin."
    )


def egress_transport() -> httpx.BaseTransport:
    """The provider API's HTTP transport: through the one egress policy (labgpu.egress), where
    the origins the operator listed may be internal (the emulator) and DigitalOcean's API must
    resolve to public addresses only; the checked address is the one connected to."""
    exemptions = egress.Exemptions(origins=tuple(configured_allowed_base_urls()))
    return egress.POLICY.transport(exemptions)


def explicitly_allowed(url: str) -> bool:
    """True when the operator listed `url`'s origin (so plain http to it is deliberate)."""
    return base_url_problem(url) is None and base_url_problem(url, allowed=[]) is not None

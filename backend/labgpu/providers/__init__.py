"""Cloud provider drivers (DigitalOcean and its local emulator) behind one small typed interface.

Import what you need from here:

    from labgpu.providers import DropletSpec, build_driver, ProviderTransientError
"""

from __future__ import annotations

import os
from typing import Any

from .base import (
    NODE_TAG_PREFIX,
    VOLUME_TAG,
    Droplet,
    DropletSpec,
    ProviderDriver,
    RateLimitSnapshot,
    Size,
    Volume,
    VolumeAction,
    VolumeSpec,
    create_or_adopt,
    node_id_from_tags,
    node_tag,
    volume_name,
)
from .credentials import base_url_problem, explicitly_allowed, token_env_var_problem
from .errors import (
    ProviderAmbiguousCreate,
    ProviderError,
    ProviderNoCapacity,
    ProviderNotFound,
    ProviderPendingEvent,
    ProviderPermanentError,
    ProviderRateLimited,
    ProviderTransientError,
    retry_countdown,
)
from .ratelimit import BudgetExhausted

KINDS = ("digitalocean", "emulator")


def build_driver(
    *,
    kind: str,
    base_url: str,
    token: str,
    redis_url: str | None = None,
    **options: Any,
) -> ProviderDriver:
    """A driver for a provider account. Both kinds speak DigitalOcean's API; only the URL differs.

    `redis_url` enables the request budget shared by all workers; without it the budget is
    per-process. `options` go to `DigitalOceanDriver` (timeouts, attempts, budget windows…).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown provider kind {kind!r}; expected one of {KINDS}")
    from .digitalocean import DigitalOceanDriver

    return DigitalOceanDriver(base_url=base_url, token=token, budget=redis_url, **options)


def driver_from_settings(
    *, kind: str, base_url: str, credential_env: str, **options: Any
) -> ProviderDriver:
    """Build a driver for a `ProviderAccount` whose token lives in the env var `credential_env`.

    The only place in this package that reads Django settings (lazily, so the package stays usable
    without Django). The shared request budget lives at the first redis:// URL among: setting or
    env `LABGPU_PROVIDER_REDIS_URL`, setting or env `REDIS_URL`, setting `CELERY_BROKER_URL`.
    """
    # Re-checked here, where the secret is read: a row saved before the rules existed (or written
    # around the model's validation) must not send a server secret anywhere (credentials.py).
    problem = token_env_var_problem(credential_env) or base_url_problem(base_url)
    if problem:
        raise ProviderPermanentError(f"provider account refused: {problem}")
    token = os.environ.get(credential_env, "")
    if not token:
        raise ProviderPermanentError(
            f"provider credential environment variable {credential_env} is not set"
        )
    try:
        from django.conf import settings

        def setting(name: str) -> object:
            return getattr(settings, name, None)
    except ImportError:

        def setting(name: str) -> object:
            return None

    try:
        candidates = [
            setting("LABGPU_PROVIDER_REDIS_URL"),
            os.environ.get("LABGPU_PROVIDER_REDIS_URL"),
            setting("REDIS_URL"),
            os.environ.get("REDIS_URL"),
            setting("CELERY_BROKER_URL"),
        ]
    except Exception:  # Django installed but not configured: environment only
        candidates = [os.environ.get("LABGPU_PROVIDER_REDIS_URL"), os.environ.get("REDIS_URL")]
    redis_url = next(
        (c for c in candidates if isinstance(c, str) and c.startswith(("redis://", "rediss://"))),
        None,
    )
    # Plain http beyond loopback only where the operator listed that origin (compose's emulator).
    options.setdefault("allow_plain_http", explicitly_allowed(base_url))
    return build_driver(kind=kind, base_url=base_url, token=token, redis_url=redis_url, **options)


__all__ = [
    "KINDS",
    "NODE_TAG_PREFIX",
    "VOLUME_TAG",
    "BudgetExhausted",
    "Droplet",
    "DropletSpec",
    "ProviderAmbiguousCreate",
    "ProviderDriver",
    "ProviderError",
    "ProviderNoCapacity",
    "ProviderNotFound",
    "ProviderPendingEvent",
    "ProviderPermanentError",
    "ProviderRateLimited",
    "ProviderTransientError",
    "RateLimitSnapshot",
    "Size",
    "Volume",
    "VolumeAction",
    "VolumeSpec",
    "build_driver",
    "create_or_adopt",
    "driver_from_settings",
    "node_id_from_tags",
    "node_tag",
    "retry_countdown",
    "volume_name",
]

"""Errors raised by provider drivers.

The split matters to the lifecycle above the driver: a *transient* error is retried (by the
driver itself, a bounded number of times, then by the Celery task); a *permanent* one fails the
node at once with the provider's own words, because retrying a 422 "no capacity" or a 401 only
burns the rate budget. `ProviderNotFound` is its own branch: for `get` it means the droplet is
gone (a vanished node), and `destroy` swallows it because "already gone" is what destroy wants.

    ProviderError
    ├── ProviderTransientError        retry (countdown: `retry_countdown(error, default)`)
    │   ├── ProviderRateLimited       429 / spent budget; `retry_after` from the provider
    │   │   └── ratelimit.BudgetExhausted
    │   ├── ProviderPendingEvent      DELETE while the create event runs (422 "pending event")
    │   └── ProviderAmbiguousCreate   create outcome unknown: adopt by `tag` before creating
    ├── ProviderPermanentError        do not retry: 401/403/422
    │   └── ProviderNoCapacity        size unavailable in `region` (try another region)
    └── ProviderNotFound              404
"""

from __future__ import annotations

import math


class ProviderError(Exception):
    """Base class. `message` is the provider's message; `id` is its error id (`not_found`, …)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        id: str | None = None,
        request_id: str | None = None,
        attributes: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.id = id
        self.request_id = request_id
        #: the body's `error_attributes`, when the provider sent any
        self.attributes = attributes or {}

    def __str__(self) -> str:
        parts = [self.message]
        if self.status is not None:
            parts.append(f"HTTP {self.status}")
        if self.id:
            parts.append(f"id={self.id}")
        if self.request_id:
            parts.append(f"request_id={self.request_id}")
        return " | ".join(parts)


class ProviderTransientError(ProviderError):
    """Worth retrying later: 429, 5xx, timeouts, connection errors, an exhausted request budget.

    `retry_after` (seconds) is the provider's hint when it gave one, so a Celery retry can use it
    as its countdown instead of a blind backoff.
    """

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: object) -> None:
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.retry_after = retry_after


class ProviderRateLimited(ProviderTransientError):
    """The provider's rate limit (HTTP 429) or our shared request budget says: not now.

    `retry_after` is the seconds until a request may go again: DigitalOcean's `retry-after` where
    it sends one (its per-minute burst limit), else `ratelimit-reset` minus now when the hourly
    quota is spent (`ratelimit-remaining: 0`). `reset_at` is `ratelimit-reset` (Unix time) as
    seen, `remaining` the `ratelimit-remaining` of the answer.
    """

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        reset_at: float | None = None,
        remaining: int | None = None,
        **kwargs: object,
    ) -> None:
        super().__init__(message, retry_after=retry_after, **kwargs)
        self.reset_at = reset_at
        self.remaining = remaining


class ProviderPendingEvent(ProviderTransientError):
    """HTTP 422 "Droplet already has a pending event" on DELETE: the droplet is still being
    created (DigitalOcean refuses a destroy until its create event ends). Retry the teardown."""


class ProviderAmbiguousCreate(ProviderTransientError):
    """`POST /v2/droplets` failed in a way that does not tell whether the droplet was created.

    Never resend the create blindly (invariant I-4: exactly one droplet per attempt): look the
    droplet up by `tag` first (`driver.find_by_tag(tag)`) and adopt it if it is there.
    """

    def __init__(self, message: str, *, tag: str, **kwargs: object) -> None:
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.tag = tag


class ProviderPermanentError(ProviderError):
    """Retrying will not help: 401/403 (credentials), 422 (no capacity, size not enabled, …)."""


class ProviderNoCapacity(ProviderPermanentError):
    """The size cannot be created in this region now (HTTP 422 "Size is not available in this
    region." or a "no capacity" answer). Permanent for this region and size; another region of
    the size may still work: `available_regions` lists those DigitalOcean named, if it did."""

    def __init__(
        self,
        message: str,
        *,
        region: str,
        size: str,
        available_regions: tuple[str, ...] = (),
        **kwargs: object,
    ) -> None:
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.region = region
        self.size = size
        self.available_regions = available_regions


class ProviderNotFound(ProviderError):
    """The droplet (or other resource) does not exist (HTTP 404)."""


def retry_countdown(
    error: BaseException, default: float, *, maximum: float | None = None, minimum: float = 1.0
) -> float:
    """Seconds a Celery task should wait before retrying after `error`.

    The provider's own hint (`retry_after` of a rate limit, a spent budget or any transient error
    that carries one) when there is one, else `default` (the task's backoff); never below
    `minimum` (the tasks pass LABGPU_RETRY_MIN_S, 1 s in production), and capped at `maximum`
    when given. For `self.retry(countdown=retry_countdown(exc, backoff))`.
    """
    hint = getattr(error, "retry_after", None) if isinstance(error, ProviderError) else None
    seconds = float(hint) if hint is not None and math.isfinite(hint) else float(default)
    if maximum is not None:
        seconds = min(seconds, maximum)
    return max(minimum, seconds)

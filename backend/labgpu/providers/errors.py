"""Errors raised by provider drivers.

The split matters to the lifecycle above the driver: a *transient* error is retried (by the
driver itself, a bounded number of times, then by the Celery task); a *permanent* one fails the
node at once with the provider's own words, because retrying a 422 "no capacity" or a 401 only
burns the rate budget. `ProviderNotFound` is its own branch: for `get` it means the droplet is
gone (a vanished node), and `destroy` swallows it because "already gone" is what destroy wants.
"""

from __future__ import annotations


class ProviderError(Exception):
    """Base class. `message` is the provider's message; `id` is its error id (`not_found`, …)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        id: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.id = id
        self.request_id = request_id

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


class ProviderNotFound(ProviderError):
    """The droplet (or other resource) does not exist (HTTP 404)."""

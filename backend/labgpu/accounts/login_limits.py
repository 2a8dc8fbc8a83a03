"""Limits on password guessing, one code path for the API login and /admin/login/ (issue 11).

Two limits, both counted in the cache (Redis in production, so every web worker shares them):
- per client address (LABGPU_THROTTLE_LOGIN, DRF's sliding window), the address as
  LABGPU_TRUSTED_PROXIES vouch for it — a forged X-Forwarded-For buys nothing;
- per account (the username as typed, existing or not, so the answer reveals nothing): after
  LABGPU_LOGIN_FREE_FAILURES failures, attempts are spaced LABGPU_LOGIN_BACKOFF_BASE_S·2^k seconds
  apart, capped at LABGPU_LOGIN_BACKOFF_MAX_S. A refused attempt checks no password and does not
  count, so neither the attacker nor the user can lengthen the wait; one attempt per window always
  gets through, so nobody is locked out for good. A success forgets the failures.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import authenticate
from django.core.cache import cache
from django.utils.translation import gettext as _

from labgpu.api.throttling import LoginRateThrottle
from labgpu.core.errors import ApplicationError
from labgpu.core.timeutils import now

if TYPE_CHECKING:
    from django.http import HttpRequest

    from labgpu.accounts.models import User

# How long one attempt may hold the account's claim while it sets the next window.
_CLAIM_S = 10


class LoginThrottled(ApplicationError):
    status_code = 429
    default_code = "throttled"

    def __init__(self, wait_s: float) -> None:
        self.retry_after_s = max(1, math.ceil(wait_s))
        super().__init__(
            _("Too many sign-in attempts; try again in %(seconds)s s.")
            % {"seconds": self.retry_after_s},
            extra={"retry_after_s": self.retry_after_s},
        )


class InvalidCredentials(ApplicationError):
    status_code = 401
    default_code = "invalid_credentials"

    def __init__(self) -> None:
        super().__init__(_("Wrong username or password."))


def _keys(username: str) -> tuple[str, str, str]:
    # Usernames compare case-insensitively at the door: "Alice" and "alice" share one budget.
    ident = hashlib.sha256(username.strip().casefold().encode()).hexdigest()[:32]
    return f"login-failures:{ident}", f"login-next-at:{ident}", f"login-claim:{ident}"


def backoff_s(over_limit: int) -> float:
    """The wait after the `over_limit`-th attempt beyond the free failures (1, 2, …)."""
    base, cap = settings.LABGPU_LOGIN_BACKOFF_BASE_S, settings.LABGPU_LOGIN_BACKOFF_MAX_S
    return min(cap, base * 2 ** min(over_limit - 1, 62))


def _count_attempt(key: str) -> int:
    window = settings.LABGPU_LOGIN_FAILURE_WINDOW_S
    cache.add(key, 0, timeout=window)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=window)
        count = 1
    cache.touch(key, window)
    return count


def _uncount(key: str) -> None:
    with contextlib.suppress(ValueError):
        cache.decr(key)


def _claim_account_attempt(username: str) -> None:
    """Count this attempt against the account, or raise LoginThrottled without counting it."""
    failures_key, next_at_key, claim_key = _keys(username)
    attempt = _count_attempt(failures_key)
    over_limit = attempt - settings.LABGPU_LOGIN_FREE_FAILURES
    if over_limit <= 0:
        return
    # Read-check-set of the window under a short claim: of parallel attempts one gets through.
    if not cache.add(claim_key, 1, timeout=_CLAIM_S):
        _uncount(failures_key)
        raise LoginThrottled(1)
    try:
        moment = now().timestamp()
        next_at = cache.get(next_at_key)
        if next_at is not None and next_at > moment:
            _uncount(failures_key)
            raise LoginThrottled(next_at - moment)
        wait = backoff_s(over_limit)
        cache.set(next_at_key, moment + wait, timeout=math.ceil(wait) + _CLAIM_S)
    finally:
        cache.delete(claim_key)


def _check_client(request: HttpRequest) -> None:
    throttle = LoginRateThrottle()
    if not throttle.allow_request(request, None):
        raise LoginThrottled(throttle.wait() or 1)


def login_with_limits(*, request: HttpRequest, username: str, password: str) -> User:
    """Check the password unless a limit says wait; raises LoginThrottled (429) or
    InvalidCredentials (401). The caller starts the session."""
    _check_client(request)
    _claim_account_attempt(username)
    user = authenticate(request, username=username, password=password)
    if user is None:
        raise InvalidCredentials()
    cache.delete_many(_keys(username)[:2])
    return user

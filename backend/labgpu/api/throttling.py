from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle

from labgpu.accounts.models import ApiToken
from labgpu.core.clientip import client_ip

if TYPE_CHECKING:
    from rest_framework.request import Request
    from rest_framework.views import APIView


class PrincipalRateThrottle(SimpleRateThrottle):
    """Rate per API token, else per user: a runaway script cannot starve the SPA."""

    scope = "principal"

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        if not request.user or not request.user.is_authenticated:
            return None
        if isinstance(request.auth, ApiToken):
            return self.key_for_token(request.auth.secret_hash)
        return self.cache_format % {"scope": self.scope, "ident": f"user-{request.user.pk}"}

    def key_for_token(self, secret_hash: str) -> str:
        return self.cache_format % {"scope": self.scope, "ident": f"token-{secret_hash[:32]}"}

    def allow_request(self, request: Request, view: APIView) -> bool:
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        return self.allow_key(key)

    def allow_key(self, key: str) -> bool:
        """SimpleRateThrottle's sliding window over the request history kept in the cache: in one
        atomic round trip where the cache offers it (labgpu.ops.cache, Redis), else as DRF does
        it with a read and a write."""
        self.key = key
        self.now = self.timer()
        sliding_window = getattr(caches[DEFAULT_CACHE_ALIAS], "sliding_window", None)
        if sliding_window is not None:
            return self._allow_in_one_round_trip(sliding_window)
        self.history = self.cache.get(key, [])
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        if len(self.history) >= self.num_requests:
            self.allowed = self.throttle_failure()
        else:
            self.allowed = self.throttle_success()
        return self.allowed

    def _allow_in_one_round_trip(self, sliding_window: Any) -> bool:
        answer = sliding_window(
            self.key, now=self.now, duration=self.duration, limit=self.num_requests
        )
        if answer is None:  # the cache is away: let the request in, as DRF's path does then
            self.history = []
            return True
        self.allowed, count, oldest = answer
        # What DRF's wait() reads of a refused request's history: how many, and the oldest time.
        self.history = [] if self.allowed or oldest is None else [oldest] * count
        return self.allowed


class ClientAddressMixin:
    """Key on the client's address as LABGPU_TRUSTED_PROXIES vouch for it (labgpu.core.clientip),
    never on an X-Forwarded-For the client wrote itself (DRF's default with NUM_PROXIES unset)."""

    def get_ident(self, request: Request) -> str:
        return client_ip(request.META)


class ClientAnonRateThrottle(ClientAddressMixin, AnonRateThrottle):
    """Anonymous requests per client address: LABGPU_THROTTLE_ANON (default 120/min)."""


class LoginRateThrottle(ClientAddressMixin, SimpleRateThrottle):
    """Password attempts per client address: LABGPU_THROTTLE_LOGIN (default 10/min). Checked by
    labgpu.accounts.login_limits for the API login and /admin/login/ alike."""

    scope = "login"

    def get_cache_key(self, request: Request, view: APIView | None) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

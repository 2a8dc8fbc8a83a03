from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.throttling import SimpleRateThrottle

from labgpu.accounts.models import ApiToken

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
            ident = f"token-{request.auth.pk}"
        else:
            ident = f"user-{request.user.pk}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


class LoginRateThrottle(SimpleRateThrottle):
    scope = "login"
    rate = "10/min"

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

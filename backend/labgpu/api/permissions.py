"""Who may call what. Object-level visibility lives in each app's selectors (I-6)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import permissions

from labgpu.accounts.models import ApiToken

if TYPE_CHECKING:
    from rest_framework.request import Request
    from rest_framework.views import APIView


class TokenScopePermission(permissions.BasePermission):
    """A personal token may only do what its scopes say.

    `read`: safe methods. `book`: also create, extend and cancel bookings (views mark themselves
    with `token_scope = "book"`). `feeds`: also create and revoke calendar feeds, which then die
    with the token (`token_scope = "feeds"`). `admin`: everything its user may do. Sessions are
    not limited.
    """

    message = "This API token lacks the scope for this request."

    def has_permission(self, request: Request, view: APIView) -> bool:
        token = request.auth
        if not isinstance(token, ApiToken):
            return True
        required = getattr(view, "token_scope", None)
        if callable(required):
            required = required(request)
        if request.method in permissions.SAFE_METHODS and set(token.scopes) & {"read", "book"}:
            return True
        return token_may(token, required)


def token_may(token: ApiToken, scope: str | None) -> bool:
    """Whether `token` may do what needs `scope` (an `admin` token may do everything)."""
    scopes = set(token.scopes)
    return "admin" in scopes or (scope is not None and scope in scopes)


class IsSiteAdmin(permissions.BasePermission):
    message = "Only site admins can do that."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)


class IsSiteAdminOrReadOnly(permissions.BasePermission):
    message = "Only site admins can change the catalog."

    def has_permission(self, request: Request, view: APIView) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return bool(request.user and request.user.is_authenticated)
        return bool(request.user and request.user.is_staff)


# Views that add a permission keep these, so no view forgets authentication or token scopes.
BASE_PERMISSIONS = [permissions.IsAuthenticated, TokenScopePermission]
SITE_ADMIN = [*BASE_PERMISSIONS, IsSiteAdmin]
SITE_ADMIN_OR_READ_ONLY = [*BASE_PERMISSIONS, IsSiteAdminOrReadOnly]

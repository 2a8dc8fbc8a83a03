from django.http import HttpRequest
from django.utils import translation
from django.utils.translation import gettext as _
from drf_spectacular.authentication import SessionScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from labgpu.accounts.models import ApiToken, User
from labgpu.accounts.services import TOKEN_PREFIX, token_authenticate
from labgpu.core.errors import CSRF_FAILED
from labgpu.core.language import shown_language


def speak_users_language(request: Request, user: User) -> None:
    """Once the caller is known, answer in their profile's language, unless the page names the
    language it shows (labgpu.core.language); before that (signed out, or refused),
    LocaleMiddleware has already chosen from Accept-Language."""
    speak_language_of(request._request, user)


def speak_language_of(request: HttpRequest, user: User) -> None:
    """speak_users_language for a view outside DRF (the booking create's token lane)."""
    if shown_language(request):
        return  # the page names the language it shows: its reader reads that one
    if user.language:
        translation.activate(user.language)
        request.LANGUAGE_CODE = translation.get_language()  # type: ignore[attr-defined]


def bearer_token(request: HttpRequest) -> ApiToken | None:
    """The live personal token of a well-formed `Authorization: Bearer lgp_…` header, else None:
    no such header, or one BearerTokenAuthentication refuses (it says why)."""
    parts = request.META.get("HTTP_AUTHORIZATION", "").split()
    if len(parts) != 2 or parts[0] != BearerTokenAuthentication.keyword:
        return None
    return token_authenticate(parts[1])  # None unless it starts with TOKEN_PREFIX


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer lgp_…` personal tokens; other bearer kinds pass through."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        header = authentication.get_authorization_header(request).decode(errors="replace")
        parts = header.split()
        if not parts or parts[0] != self.keyword:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(_("Malformed Authorization header."))
        if not parts[1].startswith(TOKEN_PREFIX):
            return None
        token = token_authenticate(parts[1])
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid, expired or revoked token."))
        speak_users_language(request, token.user)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class CsrfCheckedSessionAuthentication(authentication.SessionAuthentication):
    """DRF's session authentication, its CSRF refusal coded `csrf_failed` like Django's own CSRF
    failure view (labgpu.api.exceptions.csrf_failure): one code for one failure (docs/api.md)."""

    def authenticate(self, request: Request) -> tuple[User, None] | None:
        found = super().authenticate(request)
        if found is not None:
            speak_users_language(request, found[0])
        return found

    def enforce_csrf(self, request: Request) -> None:
        try:
            super().enforce_csrf(request)
        except exceptions.PermissionDenied:
            # Refused before authenticate() returned: speak the session user's language here.
            speak_users_language(request, request._request.user)
            # DRF's "CSRF Failed: <Django's reason>" is English only; one sentence for both paths.
            raise exceptions.PermissionDenied(CSRF_FAILED, code="csrf_failed") from None


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "labgpu.accounts.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {"type": "http", "scheme": "bearer", "description": "Personal API token (lgp_…)"}


class CsrfCheckedSessionScheme(SessionScheme):
    """The schema's `cookieAuth`, as for DRF's own session authentication."""

    target_class = "labgpu.accounts.authentication.CsrfCheckedSessionAuthentication"

"""OpenID Connect sign-in: authorization code flow with PKCE and nonce (mozilla-django-oidc),
endpoints from discovery, ID tokens checked for signature, issuer, audience, expiry and nonce.

The library leaves audience and issuer unchecked (`verify_aud: False`), matches users by e-mail
and reads every endpoint from settings at construction; LabGPU's subclasses close those gaps.
"""

import logging
from typing import Any
from urllib.parse import urlencode

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.views.generic import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import absolutify
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from labgpu.accounts.sessions import LOGOUT_REDIRECT_SESSION_KEY
from labgpu.core.timeutils import now
from labgpu.sso import http, linking, services
from labgpu.sso.discovery import DiscoveryError, oidc_setting, provider_metadata

logger = logging.getLogger(__name__)

SOURCE = "oidc"
# Clock skew allowed between LabGPU and the provider when checking `exp` and `iat`.
LEEWAY_S = 60


# The session key that marks an OIDC round trip as "link this identity to me" (rule a).
LINK_SESSION_KEY = "labgpu_oidc_link_user"


def groups_from_claims(claims: dict[str, Any]) -> set[str] | None:
    """The groups claim as a set of its strings, compared exactly later; None when the provider
    did not send a list, so that a sync never reads a missing or malformed claim as "in no
    group" nor a lone string as a group (issue 22 item 3). Entra ID replaces a long list by a
    `_claim_names` reference (group overage); that is missing too. Items that are not strings or
    hold a control character name no group."""
    name = settings.LABGPU_OIDC_GROUPS_CLAIM
    value = claims.get(name)
    if not isinstance(value, list) or name in (claims.get("_claim_names") or {}):
        return None
    return {
        group
        for group in value
        if isinstance(group, str) and group and not any(ord(char) < 32 for char in group)
    }


def select_jwk(keys: list[dict[str, Any]], header: dict[str, Any]) -> dict[str, Any]:
    """The provider's key for an ID token's header: by `kid` when the header names one; without
    a `kid` (OIDC Core §10.1 allows it when the JWKS leaves no doubt), the one signing key for
    the header's algorithm. Never a guess between several."""
    algorithm = header.get("alg")
    usable = [
        key
        for key in keys
        if isinstance(key, dict)
        and key.get("use", "sig") == "sig"
        and key.get("alg", algorithm) == algorithm
    ]
    kid = header.get("kid")
    if kid is not None:
        usable = [key for key in usable if key.get("kid") == kid]
    if len(usable) != 1:
        raise SuspiciousOperation(
            f"no single signing key for kid {kid!r} and alg {algorithm!r} in the provider's JWKS"
        )
    return usable[0]


class OidcBackend(OIDCAuthenticationBackend):
    """Signs in the user an OpenID Provider vouches for; answers nothing to password logins."""

    get_settings = staticmethod(oidc_setting)
    OIDC_RP_IDP_SIGN_KEY = None
    accepts_passwords = False  # labgpu.accounts.backends.password_login_enabled

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The library resolves every endpoint here, for every authenticate() of any kind; LabGPU
        # resolves them when an OIDC sign-in needs them, so a password login never waits on the
        # provider's discovery document.
        self.UserModel = get_user_model()

    @property
    def OIDC_OP_TOKEN_ENDPOINT(self) -> str:
        return oidc_setting("OIDC_OP_TOKEN_ENDPOINT")

    @property
    def OIDC_OP_USER_ENDPOINT(self) -> str | None:
        return oidc_setting("OIDC_OP_USER_ENDPOINT", None)

    @property
    def OIDC_OP_JWKS_ENDPOINT(self) -> str:
        return oidc_setting("OIDC_OP_JWKS_ENDPOINT")

    @property
    def OIDC_RP_CLIENT_ID(self) -> str:
        return settings.OIDC_RP_CLIENT_ID

    @property
    def OIDC_RP_CLIENT_SECRET(self) -> str:
        return settings.OIDC_RP_CLIENT_SECRET

    @property
    def OIDC_RP_SIGN_ALGO(self) -> str:
        return settings.OIDC_RP_SIGN_ALGO

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        # Only the callback view passes a nonce; any other authenticate() is not ours.
        if not settings.LABGPU_OIDC_ENABLED or request is None or "nonce" not in kwargs:
            return None
        try:
            return super().authenticate(request, **kwargs)
        except (SuspiciousOperation, DiscoveryError, *http.ERRORS) as refused:
            logger.warning("OIDC sign-in refused: %s", refused)
            return None

    def get_user(self, user_id: int) -> Any:
        # The library's get_user skips Django's is_active check; a user disabled in LabGPU (or by
        # a directory sync) must lose their session at once, as with a password login.
        return ModelBackend.get_user(self, user_id)

    # The library's three provider calls use `requests` directly; these send them through the
    # egress policy (labgpu.sso.http) and otherwise do as the library does.
    def get_token(self, payload: dict[str, Any]) -> dict[str, Any]:
        auth = None
        if self.get_settings("OIDC_TOKEN_USE_BASIC_AUTH", False):
            auth = (payload["client_id"], payload.pop("client_secret"))
        response = http.post(self.OIDC_OP_TOKEN_ENDPOINT, data=payload, auth=auth)
        if response.status_code != 200:
            raise SuspiciousOperation(f"the token endpoint answered HTTP {response.status_code}")
        return response.json()

    def retrieve_matching_jwk(self, token: str) -> jwt.PyJWK:
        """The library indexes `header["kid"]` (a KeyError, so a 500, for a token without one)
        and takes the last key that matches; LabGPU picks exactly one (select_jwk)."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as invalid:
            raise SuspiciousOperation(f"ID token refused: {invalid}") from invalid
        response = http.get(self.OIDC_OP_JWKS_ENDPOINT)
        response.raise_for_status()
        keys = response.json().get("keys")
        try:
            return jwt.PyJWK(select_jwk(keys if isinstance(keys, list) else [], header))
        except jwt.PyJWTError as invalid:
            raise SuspiciousOperation(f"the provider's key is unusable: {invalid}") from invalid

    def _userinfo(self, access_token: str) -> dict[str, Any]:
        response = http.get(
            self.OIDC_OP_USER_ENDPOINT, headers={"Authorization": f"Bearer {access_token}"}
        )
        response.raise_for_status()
        if response.headers.get("content-type", "").lower().startswith("application/jwt"):
            return self.verify_token(response.text)
        return response.json()

    def _verify_jws(self, payload: str, key: Any) -> dict[str, Any]:
        """Signature with the provider's key and the configured algorithm only, issuer, audience
        (and `azp` when there are several), `exp` and `iat` within LEEWAY_S of our clock."""
        try:
            header = jwt.get_unverified_header(payload)
            if header.get("alg") != self.OIDC_RP_SIGN_ALGO:
                raise SuspiciousOperation(
                    f"ID token signed with {header.get('alg')!r}, not {self.OIDC_RP_SIGN_ALGO!r}"
                )
            claims = jwt.decode(
                payload,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=provider_metadata()["issuer"],
                # Expiry is checked below against labgpu.core.timeutils.now, the one clock.
                options={
                    "require": ["iss", "aud", "sub", "exp", "iat"],
                    "verify_exp": False,
                    "verify_iat": False,
                },
            )
        except jwt.PyJWTError as invalid:
            raise SuspiciousOperation(f"ID token refused: {invalid}") from invalid
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.OIDC_RP_CLIENT_ID:
            raise SuspiciousOperation("ID token for several audiences without our azp")
        moment = now().timestamp()
        if not isinstance(claims["exp"], int | float) or claims["exp"] + LEEWAY_S < moment:
            raise SuspiciousOperation("ID token expired")
        if not isinstance(claims["iat"], int | float) or claims["iat"] - LEEWAY_S > moment:
            raise SuspiciousOperation("ID token issued in the future")
        return claims

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> dict:
        """The ID token's claims, completed by the UserInfo endpoint's where there is one (some
        providers put only `sub` in the ID token, others leave groups out of UserInfo)."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            userinfo = self._userinfo(access_token)
            if userinfo.get("sub") != payload["sub"]:
                raise SuspiciousOperation("UserInfo is about someone else (sub differs)")
            claims.update(userinfo)
        return claims

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict) -> Any:
        claims = self.get_userinfo(access_token, id_token, payload)
        link_to = self._link_intent()
        try:
            if link_to is not None:
                linking.oidc_identity_link(user=link_to, issuer=payload["iss"], claims=claims)
                user = link_to
            else:
                user = linking.oidc_user_upsert(issuer=payload["iss"], claims=claims)
        except linking.SsoRefused as refused:
            raise SuspiciousOperation(refused.message) from None
        if settings.LABGPU_OIDC_GROUPS_CLAIM:
            groups = groups_from_claims(claims)
            if groups is None:
                logger.warning(
                    "OIDC: no %r claim for %s; memberships left as they are",
                    settings.LABGPU_OIDC_GROUPS_CLAIM,
                    user.username,
                )
            else:
                services.sync_memberships(
                    user=user, groups=groups, source=SOURCE, issuer=payload["iss"]
                )
        self._remember_logout_url(id_token)
        return user

    def _link_intent(self) -> Any:
        """The signed-in user who started this round trip from their profile to link the
        identity (OidcLoginView with ?link=1), if it is still them."""
        wanted = self.request.session.pop(LINK_SESSION_KEY, None)
        user = getattr(self.request, "user", None)
        if wanted is None or user is None or not user.is_authenticated or user.pk != wanted:
            return None
        return user

    def _remember_logout_url(self, id_token: str) -> None:
        """RP-initiated logout 1.0: where the API logout sends the browser, when the provider
        has an end-session endpoint."""
        endpoint = provider_metadata().get("end_session_endpoint")
        if not endpoint:
            self.request.session.pop(LOGOUT_REDIRECT_SESSION_KEY, None)
            return
        query = urlencode(
            {
                "id_token_hint": id_token,
                "client_id": self.OIDC_RP_CLIENT_ID,
                "post_logout_redirect_uri": absolutify(
                    self.request, settings.LABGPU_OIDC_POST_LOGOUT_PATH
                ),
            }
        )
        separator = "&" if "?" in endpoint else "?"
        self.request.session[LOGOUT_REDIRECT_SESSION_KEY] = f"{endpoint}{separator}{query}"


class OidcLoginView(OIDCAuthenticationRequestView):
    """GET /oidc/login/?next=/path: to the provider with state, nonce and a PKCE challenge."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, **kwargs: Any) -> None:
        View.__init__(self, **kwargs)  # endpoints come from discovery in get(), not here

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.LABGPU_OIDC_ENABLED:
            raise Http404
        try:
            self.OIDC_OP_AUTH_ENDPOINT = oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except DiscoveryError as failure:
            logger.error("OIDC sign-in unavailable: %s", failure)
            return HttpResponseRedirect(settings.LOGIN_REDIRECT_URL_FAILURE)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        # ?link=1 from the profile page: bind the identity to the signed-in user (rule a).
        if request.GET.get("link") == "1" and request.user.is_authenticated:
            request.session[LINK_SESSION_KEY] = request.user.pk
        else:
            request.session.pop(LINK_SESSION_KEY, None)
        return super().get(request)


class OidcCallbackView(OIDCAuthenticationCallbackView):
    """GET /oidc/callback/?code=…&state=…: the provider's answer; signs in, then back to `next`
    (the SPA loads signed in), or to the login page with `sso_error`."""

    get_settings = staticmethod(oidc_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.LABGPU_OIDC_ENABLED:
            raise Http404
        try:
            return super().get(request)
        except SuspiciousOperation as refused:  # an unknown or replayed state
            logger.warning("OIDC callback refused: %s", refused)
            return self.login_failure()

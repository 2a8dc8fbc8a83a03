"""External identities → local accounts, by identity and never by name (invariant I-10).

An OIDC identity is (issuer, `sub`), an LDAP one (directory, entryUUID or DN). A first sign-in
creates a NEW account with a free username (labgpu.sso.usernames). It adopts an existing account
only when
  (a) the person, signed in to that account, links the identity from their profile,
  (b) a site admin pre-linked it (an OidcIdentity / DirectoryAccount row made in the admin), or
  (c) the provider's verified-e-mail adoption is on (LABGPU_OIDC_ADOPT_VERIFIED_EMAIL_DOMAINS),
      the claim says `email_verified: true` for an address in a listed domain, and exactly one
      account that is not a site admin has that address.
OpenID Connect Core 1.0 §5.7: only `iss` + `sub` identify an End-User; `email` and
`preferred_username` may change and need not be unique (docs/security.md, "Account linking").
"""

from __future__ import annotations

import zoneinfo
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from labgpu.accounts.emails import users_with_verified_email
from labgpu.accounts.models import User
from labgpu.audit.services import audit_record
from labgpu.core.errors import ApplicationError, Conflict, NotPermitted
from labgpu.core.timeutils import now
from labgpu.sso.models import IdentityLink, OidcIdentity
from labgpu.sso.usernames import free_username


class SsoRefused(ApplicationError):
    """A provider's answer that LabGPU will not sign anyone in with."""

    status_code = 403
    default_code = "sso_refused"


def language_from_locale(locale: object) -> str | None:
    """The User.language for an OIDC `locale` claim (BCP 47: "zh-CN", "zh_Hans", "en-GB")."""
    if not isinstance(locale, str):
        return None
    primary = locale.replace("_", "-").lower().split("-")[0]
    return {"zh": "zh-hans", "en": "en"}.get(primary)


def timezone_from_claim(value: object) -> str | None:
    return value if isinstance(value, str) and value in zoneinfo.available_timezones() else None


def claim_text(claims: dict[str, Any], name: str, limit: int) -> str:
    """A string claim, trimmed; "" when absent, not a string, or holding a control character
    (a NUL cannot be stored, a newline has no place in a name or an address)."""
    value = claims.get(name) if name else None
    if not isinstance(value, str) or any(ord(char) < 32 or ord(char) == 127 for char in value):
        return ""
    return value.strip()[:limit]


def verified_email(claims: dict[str, Any]) -> str:
    """The e-mail claim when the provider says it verified it (`email_verified` is JSON true)."""
    if claims.get("email_verified") is not True:
        return ""
    return claim_text(claims, settings.LABGPU_OIDC_EMAIL_CLAIM, 254)


def create_user_from_provider(*, proposed_username: str, **fields: Any) -> User:
    """A new account named after `proposed_username`, or a free variant of it; never an error
    for a taken name (two first sign-ins at once: the second takes the next variant)."""
    for _attempt in range(5):
        username = free_username(proposed_username, User.objects.values_list("username", flat=True))
        user = User(username=username, **fields)
        user.set_unusable_password()
        try:
            with transaction.atomic():
                user.save()
            return user
        except IntegrityError:
            continue
    raise Conflict(_("Could not find a free username; try again."), code="username_race")


def _adoptable_by_email(*, issuer: str, claims: dict[str, Any]) -> User | None:
    """Rule (c): the one non-site-admin account with the provider-verified address, when
    adoption is on for its domain and the account has no identity at this issuer yet."""
    domains = settings.LABGPU_OIDC_ADOPT_VERIFIED_EMAIL_DOMAINS
    email = verified_email(claims)
    if not domains or "@" not in email or email.rsplit("@", 1)[1].lower() not in domains:
        return None
    # The local account must have proved the address too (labgpu.accounts.emails): an address
    # typed into a profile and never verified adopts nothing.
    candidates = list(
        users_with_verified_email(email)
        .filter(is_staff=False, is_superuser=False)
        .exclude(oidc_identities__issuer=issuer)
        .order_by("pk")[:2]
    )
    return candidates[0] if len(candidates) == 1 else None


def _proposed_username(claims: dict[str, Any]) -> str:
    """The raw username claim (safe_username cleans any string), else the e-mail's local part."""
    for value in (
        claims.get(settings.LABGPU_OIDC_USERNAME_CLAIM),
        str(claims.get(settings.LABGPU_OIDC_EMAIL_CLAIM) or "").split("@")[0],
    ):
        if isinstance(value, str) and value.strip():
            return value[:1000]
    return ""


def _subject(claims: dict[str, Any]) -> str:
    subject = claims.get("sub")
    # OIDC Core §2: sub is at most 255 ASCII characters; a NUL would fail the lookup with a 500.
    if not isinstance(subject, str) or not subject or len(subject) > 255:
        raise SsoRefused(_("The provider sent no usable subject."))
    if any(ord(char) < 32 or ord(char) == 127 for char in subject):
        raise SsoRefused(_("The provider's subject holds a control character."))
    return subject


@transaction.atomic
def oidc_user_upsert(*, issuer: str, claims: dict[str, Any]) -> User:
    """The user an OpenID Provider's verified claims name: the account bound to (issuer, sub),
    else (rule c) one adopted by verified e-mail, else a new account. Names and the e-mail follow
    the provider only on accounts the provider created (and the e-mail only when verified);
    time zone and language are filled at creation only, as people change them."""
    subject = _subject(claims)
    identity = (
        OidcIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    )
    if identity is not None:
        if not identity.usable_for_sign_in():
            raise SsoRefused(_("This link to a site admin awaits a site admin's confirmation."))
        user = identity.user
    else:
        user = _adoptable_by_email(issuer=issuer, claims=claims)
        if user is not None:
            method, action = IdentityLink.Method.VERIFIED_EMAIL, "user.sso_adopt_email"
        else:
            user = create_user_from_provider(
                proposed_username=_proposed_username(claims),
                email=verified_email(claims),
                verified_email=verified_email(claims),
                timezone=timezone_from_claim(claims.get("zoneinfo")) or "UTC",
                language=language_from_locale(claims.get("locale")) or "en",
            )
            method, action = IdentityLink.Method.CREATED, "user.sso_create"
        identity = OidcIdentity.objects.create(
            user=user, issuer=issuer, subject=subject, link_method=method
        )
        audit_record(
            actor=None,
            action=action,
            target=user,
            data={"user": user.username, "issuer": issuer, "subject": subject},
        )
    if identity.link_method == IdentityLink.Method.CREATED:
        _follow_provider(user, claims)
    return user


def _follow_provider(user: User, claims: dict[str, Any]) -> None:
    changed = []
    for field_name, value in (
        ("email", verified_email(claims)),
        ("first_name", claim_text(claims, "given_name", 150)),
        ("last_name", claim_text(claims, "family_name", 150)),
    ):
        if value and getattr(user, field_name) != value:
            setattr(user, field_name, value)
            changed.append(field_name)
    if "email" in changed:  # the provider vouched for it (email_verified)
        user.verified_email = user.email
        changed.append("verified_email")
    if changed:
        user.save(update_fields=changed)


@transaction.atomic
def oidc_identity_link(*, user: User, issuer: str, claims: dict[str, Any]) -> OidcIdentity:
    """Rule (a): `user`, signed in, proved this identity at the provider just now; bind it to
    them. Refused when it already belongs to someone else or they have one at this issuer."""
    subject = _subject(claims)
    existing = OidcIdentity.objects.filter(issuer=issuer, subject=subject).first()
    if existing is not None:
        if existing.user_id == user.pk:
            return existing
        raise SsoRefused(_("This identity is already linked to another account."))
    if OidcIdentity.objects.filter(user=user, issuer=issuer).exists():
        raise SsoRefused(_("Your account is already linked to another identity at this provider."))
    identity = OidcIdentity.objects.create(
        user=user,
        issuer=issuer,
        subject=subject,
        link_method=IdentityLink.Method.USER,
        confirmed_at=now(),
        confirmed_by=user,
    )
    audit_record(
        actor=user,
        action="user.sso_link",
        target=user,
        data={"user": user.username, "issuer": issuer, "subject": subject},
    )
    return identity


def _require_site_admin(actor: User) -> None:
    if not actor.is_site_admin:
        raise NotPermitted(_("Only site admins review identity links."), code="not_site_admin")


def _link_data(link: IdentityLink) -> dict[str, object]:
    data: dict[str, object] = {"user": link.user.username, "method": link.link_method}
    if isinstance(link, OidcIdentity):
        data |= {"issuer": link.issuer, "subject": link.subject}
    else:
        data |= {"dn": getattr(link, "dn", "")}
    return data


@transaction.atomic
def identity_link_confirm(*, actor: User, link: IdentityLink) -> IdentityLink:
    """A site admin vouches that a link made by name joins the right person."""
    _require_site_admin(actor)
    link.confirmed_at, link.confirmed_by = now(), actor
    link.save(update_fields=["confirmed_at", "confirmed_by", "updated_at"])
    audit_record(actor=actor, action="sso.link_confirm", target=link.user, data=_link_data(link))
    return link


@transaction.atomic
def identity_link_cut(*, actor: User, link: IdentityLink) -> None:
    """A site admin cuts a link: the identity's next sign-in creates a new account (or is
    linked again by one of the three rules); the local account stays as it is."""
    _require_site_admin(actor)
    audit_record(actor=actor, action="sso.link_cut", target=link.user, data=_link_data(link))
    link.delete()

"""Whose address is whose (issue 22 item 4): an e-mail address counts only once its owner proved it.

`User.email` is what people see and type; it counts — for invitations, for adopting an account
at a single sign-on, for notifications — only while it equals `User.verified_email`, the address
whose mail its owner read. A change asked for through the API stays pending (`pending_email`,
with a hashed, single-use, expiring link mailed to the new address) and the old address stays in
effect until the link is opened. So nobody can claim a stranger's address by typing it.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from labgpu.accounts.models import User
from labgpu.audit.services import audit_record
from labgpu.core.errors import NotFound
from labgpu.core.timeutils import now

logger = logging.getLogger(__name__)

TOKEN_PREFIX = "lgv_"


def _hash(raw: str) -> str:
    # 256 bits of entropy, as API tokens: a fast hash is enough.
    return hashlib.sha256(raw.encode()).hexdigest()


def email_is_verified(user: User) -> bool:
    """The account's address is one its owner proved (compared case-insensitively)."""
    return bool(user.email) and user.email.casefold() == (user.verified_email or "").casefold()


def verified_email(user: User) -> str:
    """The address to trust for `user` (invitations, adoption, mail), or "" if none is proved."""
    return user.email if email_is_verified(user) else ""


def users_with_verified_email(email: str):  # type: ignore[no-untyped-def]
    """Accounts whose proved address is `email`; an unverified claim to it matches none."""
    return User.objects.filter(email__iexact=email, verified_email__iexact=email)


def verification_link(raw: str) -> str:
    return f"{settings.LABGPU_PUBLIC_URL.rstrip('/')}/verify-email/{raw}"


@transaction.atomic
def email_change_request(*, user: User, email: str) -> str | None:
    """Ask to use `email`: mail a link to it and keep it pending; the current address stays in
    effect until the link is opened. Asking for the address already in effect and proved changes
    nothing; asking again replaces the earlier link. Clearing the address ("") takes effect at
    once (nothing to prove). Returns the raw secret (never stored), or None when nothing was sent.
    """
    email = email.strip()
    if not email:
        User.objects.filter(pk=user.pk).update(
            email="",
            verified_email="",
            pending_email="",
            pending_email_token_hash=None,
            pending_email_expires_at=None,
        )
        user.email = user.verified_email = user.pending_email = ""
        user.pending_email_token_hash = user.pending_email_expires_at = None
        return None
    if email.casefold() == user.email.casefold() and email_is_verified(user):
        if user.pending_email:  # back to the address in effect: drop the pending change
            User.objects.filter(pk=user.pk).update(
                pending_email="", pending_email_token_hash=None, pending_email_expires_at=None
            )
            user.pending_email, user.pending_email_token_hash = "", None
            user.pending_email_expires_at = None
        return None
    raw = f"{TOKEN_PREFIX}{secrets.token_hex(4)}_{secrets.token_urlsafe(32)}"
    user.pending_email = email
    user.pending_email_token_hash = _hash(raw)
    user.pending_email_expires_at = now() + timedelta(
        seconds=settings.LABGPU_EMAIL_VERIFICATION_TTL_S
    )
    user.save(
        update_fields=["pending_email", "pending_email_token_hash", "pending_email_expires_at"]
    )
    audit_record(
        actor=user,
        action="user.email_change_request",
        target=user,
        data={"user": user.username, "email": email, "current": user.email},
    )
    link = verification_link(raw)
    transaction.on_commit(lambda: _send_verification(user=user, email=email, link=link))
    return raw


def _send_verification(*, user: User, email: str, link: str) -> None:
    with translation.override(user.language):
        subject = gettext("Confirm your e-mail address for LabGPU")
        body = gettext(
            "%(user)s asked LabGPU to send their mail to this address. Open this link to "
            "confirm it:\n%(link)s\n\nThe link works once, for %(hours)s hours. Until then, "
            "LabGPU keeps using the previous address. If you did not ask for this, ignore "
            "this e-mail."
        ) % {
            "user": user.username,
            "link": link,
            "hours": settings.LABGPU_EMAIL_VERIFICATION_TTL_S // 3600,
        }
    try:
        send_mail(subject, body, None, [email])
    except Exception:  # a mail outage must not fail the request; they can ask again
        logger.exception("could not send the verification link for user %s", user.pk)


@transaction.atomic
def email_verify(*, raw: str) -> User:
    """Open a verification link: its pending address becomes the account's address, proved.
    One conditional UPDATE, so a link works once even when opened twice at the same moment."""
    invalid = NotFound(
        _("This verification link is not valid or has expired; ask for a new one on your profile."),
        code="email_verification_invalid",
    )
    if not raw.startswith(TOKEN_PREFIX):
        raise invalid
    digest = _hash(raw)
    user = User.objects.filter(
        pending_email_token_hash=digest, pending_email_expires_at__gt=now()
    ).first()
    if user is None:
        raise invalid
    previous, email = user.email, user.pending_email
    used = User.objects.filter(pk=user.pk, pending_email_token_hash=digest).update(
        email=email,
        verified_email=email,
        pending_email="",
        pending_email_token_hash=None,
        pending_email_expires_at=None,
    )
    if not used:
        raise invalid
    user.refresh_from_db()
    audit_record(
        actor=user,
        action="user.email_verified",
        target=user,
        data={"user": user.username, "email": email, "previous": previous},
    )
    return user

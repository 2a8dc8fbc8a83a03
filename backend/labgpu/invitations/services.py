"""Invitations: the way a lab admin brings someone into a lab (issue 16 item 4, issue 11 item 16).

Being in a lab shares a person's bookings and usage with it, so nobody is put in a lab by a lab
admin alone: the lab admin sends a link, and the person joins by accepting it while signed in
(any sign-in: local, LDAP, OIDC), or by making a local account from it when local sign-in is on.
The link is the credential: single-use, expiring, stored only as a hash.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils.translation import gettext_lazy as _

from labgpu.accounts.emails import users_with_verified_email, verified_email
from labgpu.accounts.models import Lab, Membership, User
from labgpu.accounts.services import require_lab_admin
from labgpu.audit.services import audit_record
from labgpu.core.errors import ApplicationError, Conflict, NotFound
from labgpu.core.timeutils import now
from labgpu.invitations import notifications
from labgpu.invitations.models import Invitation

TOKEN_PREFIX = "lgi_"


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def local_signup_enabled() -> bool:
    # labgpu.sso's switch for local passwords; an invitation cannot open a door it closed.
    return bool(getattr(settings, "LABGPU_LOCAL_LOGIN_ENABLED", True))


def invitation_link(raw: str) -> str:
    return f"{settings.LABGPU_PUBLIC_URL.rstrip('/')}/invite/{raw}"


@transaction.atomic
def invitation_create(
    *, actor: User, lab: Lab, email: str, role: str = Membership.Role.MEMBER
) -> tuple[Invitation, str]:
    """Invite `email` to `lab` and mail them the link; returns the invitation and the raw
    secret, which is never stored. Lab admins of `lab` and site admins only."""
    require_lab_admin(actor=actor, lab=lab)
    email = email.strip()
    # Serialise invitations to one lab: the pending check below is then a real guarantee.
    Lab.objects.select_for_update().filter(pk=lab.pk).first()
    if Membership.objects.filter(lab=lab, user__in=users_with_verified_email(email)).exists():
        raise Conflict(
            _("Someone with %(email)s is already in %(lab)s.") % {"email": email, "lab": lab.name},
            code="already_member",
            field="email",
        )
    pending = Invitation.objects.filter(
        lab=lab,
        email__iexact=email,
        accepted_at__isnull=True,
        revoked_at__isnull=True,
        expires_at__gt=now(),
    )
    if pending.exists():
        raise Conflict(
            _("%(email)s already has a pending invitation; revoke it to send a new one.")
            % {"email": email},
            code="already_invited",
            field="email",
        )
    prefix = secrets.token_hex(4)
    raw = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    invitation = Invitation.objects.create(
        lab=lab,
        email=email,
        role=role,
        prefix=prefix,
        token_hash=hash_token(raw),
        invited_by=actor,
        expires_at=now() + timedelta(seconds=settings.LABGPU_INVITATION_TTL_S),
    )
    audit_record(
        actor=actor,
        action="invitation.create",
        target=invitation,
        lab=lab,
        data={"email": email, "role": role, "expires_at": invitation.expires_at.isoformat()},
    )
    link = invitation_link(raw)
    transaction.on_commit(lambda: notifications.invitation_sent(invitation=invitation, link=link))
    return invitation, raw


@transaction.atomic
def invitation_revoke(*, actor: User, invitation: Invitation) -> None:
    require_lab_admin(actor=actor, lab=invitation.lab)
    revoked = Invitation.objects.filter(
        pk=invitation.pk, accepted_at__isnull=True, revoked_at__isnull=True
    ).update(revoked_at=now())
    if not revoked:
        raise Conflict(_("This invitation was already used or revoked."), code="invitation_closed")
    audit_record(
        actor=actor,
        action="invitation.revoke",
        target=invitation,
        lab=invitation.lab,
        data={"email": invitation.email},
    )


def invitation_for_token(raw: str) -> Invitation:
    """The invitation a link names, whatever its state; NotFound for anything else."""
    invitation = None
    if raw.startswith(TOKEN_PREFIX):
        invitation = (
            Invitation.objects.select_related("lab", "invited_by")
            .filter(token_hash=hash_token(raw))
            .first()
        )
    if invitation is None:
        raise NotFound(_("This invitation link is not valid."), code="invitation_invalid")
    return invitation


def _require_open(invitation: Invitation) -> None:
    status = invitation.status
    if status == Invitation.Status.EXPIRED:
        raise Conflict(
            _("This invitation has expired; ask the lab admin for a new one."),
            code="invitation_expired",
        )
    if status != Invitation.Status.PENDING:
        raise Conflict(_("This invitation was already used or revoked."), code="invitation_closed")


def _join(*, invitation: Invitation, user: User) -> Membership:
    """Consume the invitation for `user` and make the membership, in the caller's transaction."""
    if Membership.objects.filter(user=user, lab=invitation.lab).exists():
        raise Conflict(
            _("You are already in %(lab)s.") % {"lab": invitation.lab.name}, code="already_member"
        )
    moment = now()
    used = Invitation.objects.filter(
        pk=invitation.pk,
        accepted_at__isnull=True,
        revoked_at__isnull=True,
        expires_at__gt=moment,
    ).update(accepted_at=moment, accepted_by=user)
    if not used:  # someone else used it, or it was revoked, since we read it
        raise Conflict(_("This invitation was already used or revoked."), code="invitation_closed")
    membership = Membership.objects.create(user=user, lab=invitation.lab, role=invitation.role)
    audit_record(
        actor=user,
        action="invitation.accept",
        target=invitation,
        lab=invitation.lab,
        data={"email": invitation.email, "user": user.username, "role": invitation.role},
    )
    return membership


def invitation_address_matches(*, invitation: Invitation, user: User) -> bool:
    """The invitation went to the address `user` proved (an unverified one is anybody's claim)."""
    return verified_email(user).casefold() == invitation.email.casefold()


@transaction.atomic
def invitation_accept(*, user: User, raw: str, confirm_other_address: bool = False) -> Membership:
    """`user`, signed in, joins the lab the link invites to. The invitation is for its address:
    from an account whose proved address differs (a forwarded link, a second account, someone
    who found it), joining takes an explicit `confirm_other_address`, and the inviter is told."""
    invitation = invitation_for_token(raw)
    _require_open(invitation)
    if invitation_address_matches(invitation=invitation, user=user):
        return _join(invitation=invitation, user=user)
    if not confirm_other_address:
        raise Conflict(
            _(
                "This invitation was sent to %(invited)s, which is not your account's verified "
                "address. Accept it only if it was meant for you; %(inviter)s will be told."
            )
            % {"invited": invitation.email, "inviter": _inviter_name(invitation)},
            code="invitation_other_address",
            extra={"invited_email": invitation.email, "your_email": verified_email(user)},
        )
    membership = _join(invitation=invitation, user=user)
    audit_record(
        actor=user,
        action="invitation.accept_other_address",
        target=invitation,
        lab=invitation.lab,
        data={
            "email": invitation.email,
            "user": user.username,
            "user_email": verified_email(user),
            "role": invitation.role,
        },
    )
    transaction.on_commit(
        lambda: notifications.invitation_accepted_from_other_address(
            invitation=invitation, user=user
        )
    )
    return membership


def _inviter_name(invitation: Invitation) -> str:
    inviter = invitation.invited_by
    return (inviter.get_full_name() or inviter.username) if inviter else str(_("the lab admin"))


@transaction.atomic
def invitation_sign_up(*, raw: str, username: str, password: str) -> tuple[User, Membership]:
    """Make a local account for someone who has none, from their invitation, and join the lab.
    The account's e-mail is the invited address (the link proves they read its mail)."""
    if not local_signup_enabled():
        raise ApplicationError(
            _(
                "Local accounts are off here: sign in with single sign-on, "
                "then open the link again."
            ),
            code="local_login_disabled",
            status_code=403,
        )
    invitation = invitation_for_token(raw)
    _require_open(invitation)
    # Only a proved address blocks: anyone may have typed the invitee's into their profile.
    if users_with_verified_email(invitation.email).exists():
        raise Conflict(
            _("An account with this e-mail address exists: sign in to accept."),
            code="account_exists",
        )
    # The link went to the invited address, so opening it proves the address.
    user = User(username=username.strip(), email=invitation.email, verified_email=invitation.email)
    try:
        user.full_clean(exclude=["password"])
        validate_password(password, user)
    except ValidationError as error:
        raise ApplicationError(
            " ".join(error.messages),
            code="invalid_signup",
            extra={"fields": getattr(error, "message_dict", {"password": error.messages})},
        ) from None
    user.set_password(password)
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError:
        raise Conflict(
            _("That username is taken."), code="username_taken", field="username"
        ) from None
    audit_record(
        actor=user,
        action="user.sign_up",
        target=user,
        lab=invitation.lab,
        data={"user": user.username, "invitation": invitation.pk},
    )
    return user, _join(invitation=invitation, user=user)

"""Directory accounts: what a sign-in or the periodic sync learnt from LDAP, and its effects."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

import ldap
from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from labgpu.accounts.models import User
from labgpu.audit.services import audit_record
from labgpu.core.errors import ApplicationError, Conflict, NotFound
from labgpu.core.timeutils import now
from labgpu.directory.ldap_client import (
    DirectoryEntry,
    DirectoryReader,
    DirectoryUnavailable,
    directory_id,
    entry_uuid_of,
    find_directory_account,
    group_set,
    ldap_configured,
)
from labgpu.directory.models import DirectoryAccount
from labgpu.sso.services import sync_memberships

logger = logging.getLogger(__name__)

SOURCE = "ldap"


def _sync_memberships(*, user: User, groups: set[str]) -> None:
    """Lab memberships (and site admin) follow the directory's groups through the site admin's
    group mappings; only what an LDAP sync made is ever changed (labgpu.sso)."""
    sync_memberships(user=user, groups=groups, source=SOURCE)


@transaction.atomic
def directory_account_seen(
    *, user: User, dn: str, groups: set[str], entry_uuid: str = "", login_name: str = ""
) -> DirectoryAccount:
    """Record that the directory knows `user` (a sign-in or a sync found them): remember their
    entry's identity, DN, login name and groups, reactivate them if a sync had deactivated them,
    sync their memberships."""
    moment = now()
    account, created = DirectoryAccount.objects.select_for_update().get_or_create(
        user=user,
        defaults={
            "directory": directory_id(),
            "dn": dn,
            "entry_uuid": entry_uuid,
            "login_name": login_name or user.username,
            "groups": sorted(groups),
            "last_synced_at": moment,
        },
    )
    if created:
        audit_record(
            actor=None,
            action="user.directory_create",
            target=user,
            data={"user": user.username, "dn": dn, "entry_uuid": entry_uuid},
        )
    # Only the sync's own deactivation is undone; a site admin's stays.
    if account.deactivated_at is not None and User.objects.filter(
        pk=user.pk, is_active=False
    ).update(is_active=True):
        user.is_active = True
        audit_record(
            actor=None,
            action="user.directory_reactivate",
            target=user,
            data={"user": user.username, "dn": dn},
        )
    if not created:
        account.dn, account.groups, account.last_synced_at = dn, sorted(groups), moment
        # A row made by DN (before issue 22, or pre-linked) is bound to the entry from now on.
        account.entry_uuid = account.entry_uuid or entry_uuid
        account.login_name = login_name or account.login_name
        account.deactivated_at = None
        account.save(
            update_fields=[
                "dn",
                "entry_uuid",
                "login_name",
                "groups",
                "last_synced_at",
                "deactivated_at",
                "updated_at",
            ]
        )
    _sync_memberships(user=user, groups=groups)
    return account


@transaction.atomic
def directory_account_gone(*, account: DirectoryAccount) -> None:
    """The directory no longer knows this person: deactivate them (no sign-in, API token or feed
    works for an inactive user) and drop the memberships their groups gave them."""
    moment = now()
    user = account.user
    if User.objects.filter(pk=user.pk, is_active=True).update(is_active=False):
        user.is_active = False
        account.deactivated_at = moment
        audit_record(
            actor=None,
            action="user.directory_deactivate",
            target=user,
            data={"user": user.username, "dn": account.dn},
        )
    account.groups = []
    account.last_synced_at = moment
    account.save(update_fields=["groups", "last_synced_at", "deactivated_at", "updated_at"])
    _sync_memberships(user=user, groups=set())


@dataclass
class ResyncResult:
    seen: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    # True when more accounts were due than one batch takes: the caller runs another batch.
    more: bool = False


def directory_resync_batch(*, limit: int | None = None) -> ResyncResult:
    """Look up the directory accounts not synced for LABGPU_LDAP_SYNC_MAX_AGE_S, oldest first,
    at most `limit` of them. Raises DirectoryUnavailable, after keeping what it did, when the
    directory stops answering: an outage must never read as "everyone left"."""
    limit = limit or settings.LABGPU_LDAP_SYNC_BATCH
    result = ResyncResult()
    due = list(
        DirectoryAccount.objects.select_related("user")
        .filter(last_synced_at__lte=now() - timedelta(seconds=settings.LABGPU_LDAP_SYNC_MAX_AGE_S))
        .order_by("last_synced_at", "pk")[: limit + 1]
    )
    result.more = len(due) > limit
    reader = DirectoryReader()
    for account in due[:limit]:
        entry: DirectoryEntry | None = reader.lookup(account.login_name or account.user.username)
        # The name may now belong to another entry (a uid given to someone else): then the
        # person this account is bound to is gone.
        if entry is None or entry.user.pk != account.user_id:
            directory_account_gone(account=account)
            result.gone.append(account.user.username)
        else:
            directory_account_seen(
                user=entry.user,
                dn=entry.dn,
                groups=entry.groups,
                entry_uuid=entry.entry_uuid,
                login_name=entry.login_name,
            )
            result.seen.append(account.user.username)
    if result.gone:
        logger.info("directory sync deactivated %s", ", ".join(result.gone))
    return result


__all__ = [
    "DirectoryUnavailable",
    "ResyncResult",
    "directory_account_gone",
    "directory_account_seen",
    "directory_link_by_user",
    "directory_resync_batch",
]


@transaction.atomic
def directory_link_by_user(*, user: User, username: str, password: str) -> DirectoryAccount:
    """Rule (a) of I-10 for LDAP: `user`, signed in, proves a directory entry by binding as it
    with its password; the entry is then bound to their account. Refused when the entry belongs
    to another account or theirs is already bound to an entry."""
    from django_auth_ldap.backend import _LDAPUser  # django-auth-ldap's own bind, by username

    if not ldap_configured():
        raise NotFound(_("No directory is configured."), code="ldap_not_configured")
    ldap_user = _LDAPUser(DirectoryReader(), username=username.strip())
    try:
        ldap_user._authenticate_user_dn(password)
        dn, attrs, groups = ldap_user.dn, ldap_user.attrs, group_set(ldap_user)
    except (ldap_user.AuthenticationFailed, ldap.LDAPError):
        raise ApplicationError(
            _("The directory refused this name and password."),
            code="invalid_credentials",
            field="password",
        ) from None
    entry_uuid = entry_uuid_of(attrs)
    bound = find_directory_account(dn=dn, entry_uuid=entry_uuid)
    if bound is not None and bound.user_id != user.pk:
        raise Conflict(
            _("This directory entry is already linked to another account."), code="identity_taken"
        )
    if bound is None and DirectoryAccount.objects.filter(user=user).exists():
        raise Conflict(
            _("Your account is already linked to another directory entry."),
            code="already_linked",
        )
    if bound is not None:
        return bound
    moment = now()
    account = DirectoryAccount.objects.create(
        user=user,
        directory=directory_id(),
        dn=dn,
        entry_uuid=entry_uuid,
        login_name=username.strip(),
        groups=sorted(groups),
        last_synced_at=moment,
        link_method=DirectoryAccount.Method.USER,
        confirmed_at=moment,
        confirmed_by=user,
    )
    audit_record(
        actor=user,
        action="user.directory_link",
        target=user,
        data={"user": user.username, "dn": dn, "entry_uuid": entry_uuid},
    )
    _sync_memberships(user=user, groups=groups)
    return account

"""Reading the LDAP directory through django-auth-ldap, telling "not there" from "not reachable".

django-auth-ldap logs LDAP errors and answers None, as it does for a user the directory does not
know. A sign-in can live with that (either way: no entry), but the periodic sync deactivates users
the directory does not know, so it must never read an outage as "everyone left".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ldap
from django.conf import settings
from django_auth_ldap.backend import LDAPBackend, ldap_error

from labgpu.accounts.models import User
from labgpu.directory.models import DirectoryAccount
from labgpu.sso.usernames import free_username


class DirectoryUnavailable(Exception):
    """The directory did not answer (down, refused the service bind, timed out)."""


def ldap_configured() -> bool:
    return bool(getattr(settings, "AUTH_LDAP_SERVER_URI", ""))


def group_set(ldap_user: Any) -> set[str]:
    """The user's groups by full DN: a name (cn) is not unique under a search base (issue 22)."""
    return set(ldap_user.group_dns)


def directory_id() -> str:
    return settings.LABGPU_LDAP_DIRECTORY_ID or getattr(settings, "AUTH_LDAP_SERVER_URI", "")


def entry_uuid_of(attrs: Any) -> str:
    """The entry's own identity: entryUUID (RFC 4530, OpenLDAP and most directories) or Active
    Directory's objectGUID; "" when the directory exposes neither (then the DN identifies)."""
    for name in ("entryUUID", "objectGUID"):
        values = (attrs or {}).get(name) or []
        if values and isinstance(values[0], str) and values[0]:
            return values[0][:64]
    return ""


def find_directory_account(*, dn: str, entry_uuid: str) -> DirectoryAccount | None:
    """The account bound to this directory entry (invariant I-10): by entryUUID, or by DN for a
    row that has none yet (made before issue 22, or pre-linked by a site admin by DN). Never by
    a username."""
    accounts = DirectoryAccount.objects.select_related("user").filter(directory=directory_id())
    if entry_uuid:
        account = accounts.filter(entry_uuid=entry_uuid).first()
        if account is not None:
            return account
        return accounts.filter(entry_uuid="", dn__iexact=dn).first()
    return accounts.filter(dn__iexact=dn).first()


@dataclass
class DirectoryEntry:
    user: User
    dn: str
    groups: set[str]
    entry_uuid: str = ""
    login_name: str = ""


class DirectoryReader(LDAPBackend):
    """Looks people up with the service account (LABGPU_LDAP_BIND_DN); signs nobody in, and
    creates nobody: an entry no DirectoryAccount is bound to reads as "no such person"."""

    creates_users = False

    def get_or_build_user(self, username: str, ldap_user: Any) -> tuple[User, bool]:
        """django-auth-ldap finds the user by `username__iexact` (which adopts any local account
        of that name, and raises MultipleObjectsReturned for `Carol` and `carol`); LabGPU finds
        them by the entry's identity and otherwise builds a new user with a free username."""
        account = find_directory_account(dn=ldap_user.dn, entry_uuid=entry_uuid_of(ldap_user.attrs))
        if account is not None:
            if not account.usable_for_sign_in():
                raise ldap_user.AuthenticationFailed("a flagged link to a site admin")
            if account.link_method != DirectoryAccount.Method.CREATED:
                # The directory's names and e-mail are not the local account's (keep_profile).
                account.user._labgpu_keep_profile = (
                    account.user.first_name,
                    account.user.last_name,
                    account.user.email,
                )
            return account.user, False
        if not self.creates_users:
            raise ldap_user.AuthenticationFailed("no account is bound to this entry")
        existing = User.objects.values_list("username", flat=True)
        return User(username=free_username(username, existing)), True

    def lookup(self, username: str) -> DirectoryEntry | None:
        """Refresh the person who signs in as `username` from the directory: their entry (names
        and e-mail written to an account the directory made), or None when the directory has no
        such person or the entry is bound to no account. Raises DirectoryUnavailable."""
        errors: list[Exception] = []

        def note(sender: type, exception: Exception, **kwargs: Any) -> None:
            errors.append(exception)

        ldap_error.connect(note, sender=type(self), weak=False)
        try:
            user = self.populate_user(username)
            entry = None
            if user is not None:
                entry = DirectoryEntry(
                    user=user,
                    dn=user.ldap_user.dn,
                    groups=group_set(user.ldap_user),
                    entry_uuid=entry_uuid_of(user.ldap_user.attrs),
                    login_name=username,
                )
        except ldap.LDAPError as error:  # the group search raises instead of reporting
            errors.append(error)
        finally:
            ldap_error.disconnect(note, sender=type(self))
        if errors:
            raise DirectoryUnavailable(str(errors[0]))
        return entry

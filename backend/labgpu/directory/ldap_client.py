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


class DirectoryUnavailable(Exception):
    """The directory did not answer (down, refused the service bind, timed out)."""


def ldap_configured() -> bool:
    return bool(getattr(settings, "AUTH_LDAP_SERVER_URI", ""))


def group_set(ldap_user: Any) -> set[str]:
    """The user's groups as both names (cn) and DNs, so a site admin may map either."""
    return set(ldap_user.group_names) | set(ldap_user.group_dns)


@dataclass
class DirectoryEntry:
    user: User
    dn: str
    groups: set[str]


class DirectoryReader(LDAPBackend):
    """Looks people up with the service account (LABGPU_LDAP_BIND_DN); signs nobody in."""

    def lookup(self, username: str) -> DirectoryEntry | None:
        """Refresh `username` from the directory: their entry (names and e-mail written to the
        user), or None when the directory has no such person. Raises DirectoryUnavailable."""
        errors: list[Exception] = []

        def note(sender: type, exception: Exception, **kwargs: Any) -> None:
            errors.append(exception)

        ldap_error.connect(note, sender=type(self), weak=False)
        try:
            user = self.populate_user(username)
            entry = None
            if user is not None:
                entry = DirectoryEntry(
                    user=user, dn=user.ldap_user.dn, groups=group_set(user.ldap_user)
                )
        except ldap.LDAPError as error:  # the group search raises instead of reporting
            errors.append(error)
        finally:
            ldap_error.disconnect(note, sender=type(self))
        if errors:
            raise DirectoryUnavailable(str(errors[0]))
        return entry

"""The LDAP / Active Directory sign-in backend (AUTHENTICATION_BACKENDS when
LABGPU_LDAP_SERVER_URI is set; config/ldap.py reads its settings)."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver
from django_auth_ldap.backend import populate_user

from labgpu.accounts.models import User
from labgpu.directory import services
from labgpu.directory.ldap_client import DirectoryReader, entry_uuid_of, group_set
from labgpu.directory.models import DirectoryAccount


@receiver(populate_user)
def keep_the_local_profile(sender: type, user: User, ldap_user: Any, **kwargs: Any) -> None:
    """An account linked to the directory (by its owner or a site admin) keeps its own names and
    e-mail: the directory's are written only to accounts the directory made."""
    kept = getattr(user, "_labgpu_keep_profile", None)
    if kept is not None:
        user.first_name, user.last_name, user.email = kept


class LdapBackend(DirectoryReader):
    """django-auth-ldap's bind authentication, plus LabGPU's rules: the account is the one bound
    to the directory entry, or a new one (DirectoryReader.get_or_build_user); a user a site admin
    deactivated stays out whatever the directory says, and each sign-in records the directory
    account and syncs lab memberships from the user's groups."""

    creates_users = True

    def authenticate_ldap_user(self, ldap_user: Any, password: str) -> User | None:
        user = super().authenticate_ldap_user(ldap_user, password)
        if user is None:
            return None
        deactivated_by_sync = (
            not user.is_active
            and DirectoryAccount.objects.filter(user=user, deactivated_at__isnull=False).exists()
        )
        if not user.is_active and not deactivated_by_sync:
            return None
        # The bind just succeeded, so the directory knows them: the sync's deactivation ends.
        services.directory_account_seen(
            user=user,
            dn=ldap_user.dn,
            groups=group_set(ldap_user),
            entry_uuid=entry_uuid_of(ldap_user.attrs),
            login_name=ldap_user._username,
        )
        return user

    def get_user(self, user_id: int) -> User | None:
        # django-auth-ldap hands back inactive users; their sessions must end as ModelBackend's do.
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

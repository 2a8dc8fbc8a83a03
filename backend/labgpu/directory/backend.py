"""The LDAP / Active Directory sign-in backend (AUTHENTICATION_BACKENDS when
LABGPU_LDAP_SERVER_URI is set; config/ldap.py reads its settings)."""

from __future__ import annotations

from typing import Any

from labgpu.accounts.models import User
from labgpu.directory import services
from labgpu.directory.ldap_client import DirectoryReader, group_set
from labgpu.directory.models import DirectoryAccount


class LdapBackend(DirectoryReader):
    """django-auth-ldap's bind authentication, plus LabGPU's rules: a user a site admin
    deactivated stays out whatever the directory says, and each sign-in records the directory
    account and syncs lab memberships from the user's groups."""

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
        services.directory_account_seen(user=user, dn=ldap_user.dn, groups=group_set(ldap_user))
        return user

    def get_user(self, user_id: int) -> User | None:
        # django-auth-ldap hands back inactive users; their sessions must end as ModelBackend's do.
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

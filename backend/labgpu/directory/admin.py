from django.contrib import admin

from labgpu.directory.models import DirectoryAccount
from labgpu.sso.admin import IdentityLinkAdmin


@admin.register(DirectoryAccount)
class DirectoryAccountAdmin(IdentityLinkAdmin):
    """Pre-link (rule b): add a row with the person's DN (the entryUUID is filled at their next
    sign-in); review links made by username with the confirm/cut actions."""

    list_display = ["user", "dn", "link_method", "confirmed_at", "last_synced_at", "deactivated_at"]
    search_fields = ["user__username", "dn", "login_name"]
    readonly_fields = [
        "entry_uuid",
        "groups",
        "last_synced_at",
        "deactivated_at",
        "confirmed_at",
        "confirmed_by",
    ]

    def get_changeform_initial_data(self, request):  # type: ignore[no-untyped-def]
        from labgpu.core.timeutils import now
        from labgpu.directory.ldap_client import directory_id

        return {"link_method": "admin", "directory": directory_id(), "last_synced_at": now()}

from django.contrib import admin

from labgpu.directory.models import DirectoryAccount


@admin.register(DirectoryAccount)
class DirectoryAccountAdmin(admin.ModelAdmin):
    list_display = ["user", "dn", "last_synced_at", "deactivated_at"]
    search_fields = ["user__username", "dn"]
    readonly_fields = ["user", "dn", "groups", "last_synced_at", "deactivated_at"]

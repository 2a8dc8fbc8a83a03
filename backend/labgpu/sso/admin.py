from django.contrib import admin

from labgpu.sso import services
from labgpu.sso.models import GroupMapping, SiteAdminGrant


@admin.register(GroupMapping)
class GroupMappingAdmin(admin.ModelAdmin):
    """Saves and deletes go through the services, which write the audit entries."""

    list_display = ["group", "lab", "role", "updated_at"]
    list_filter = ["role", "lab"]
    search_fields = ["group"]

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        services.group_mapping_save(actor=request.user, mapping=obj)

    def delete_model(self, request, obj):  # type: ignore[no-untyped-def]
        services.group_mapping_delete(actor=request.user, mapping=obj)

    def delete_queryset(self, request, queryset):  # type: ignore[no-untyped-def]
        for mapping in queryset:
            services.group_mapping_delete(actor=request.user, mapping=mapping)


@admin.register(SiteAdminGrant)
class SiteAdminGrantAdmin(admin.ModelAdmin):
    list_display = ["user", "source", "created_at"]
    readonly_fields = ["user", "source"]

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False  # only a sync grants; deleting one leaves the user a hand-made site admin

from django.contrib import admin, messages
from django.utils.translation import gettext_lazy as _

from labgpu.sso import linking, services
from labgpu.sso.models import GroupMapping, OidcIdentity, SiteAdminGrant


@admin.register(GroupMapping)
class GroupMappingAdmin(admin.ModelAdmin):
    """Saves and deletes go through the services, which write the audit entries."""

    list_display = ["group", "source", "issuer", "lab", "role", "active", "updated_at"]
    list_filter = ["active", "source", "role", "lab"]
    search_fields = ["group"]
    readonly_fields = ["active", "inactive_reason"]

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


class FlaggedFilter(admin.SimpleListFilter):
    title = _("review")
    parameter_name = "flagged"

    def lookups(self, request, model_admin):  # type: ignore[no-untyped-def]
        return [("yes", _("Made by username, not yet confirmed"))]

    def queryset(self, request, queryset):  # type: ignore[no-untyped-def]
        if self.value() == "yes":
            return queryset.filter(link_method="username", confirmed_at__isnull=True)
        return queryset


class IdentityLinkAdmin(admin.ModelAdmin):
    """Site admins pre-link an identity (rule b: add a row, method "admin") and review the links
    made by username before issue 22: confirm them or cut them (both audited)."""

    list_filter = [FlaggedFilter, "link_method"]
    actions = ["confirm_links", "cut_links"]
    readonly_fields = ["confirmed_at", "confirmed_by"]

    def get_changeform_initial_data(self, request):  # type: ignore[no-untyped-def]
        return {"link_method": "admin"}

    @admin.action(description=_("Confirm: the link joins the right person"))
    def confirm_links(self, request, queryset):  # type: ignore[no-untyped-def]
        for link in queryset.select_related("user"):
            linking.identity_link_confirm(actor=request.user, link=link)
        self.message_user(request, _("Links confirmed."), messages.SUCCESS)

    @admin.action(description=_("Cut: the identity's next sign-in makes a new account"))
    def cut_links(self, request, queryset):  # type: ignore[no-untyped-def]
        for link in queryset.select_related("user"):
            linking.identity_link_cut(actor=request.user, link=link)
        self.message_user(request, _("Links cut."), messages.SUCCESS)


@admin.register(OidcIdentity)
class OidcIdentityAdmin(IdentityLinkAdmin):
    list_display = ["user", "issuer", "subject", "link_method", "confirmed_at"]
    search_fields = ["user__username", "subject"]

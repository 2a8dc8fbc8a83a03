from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from labgpu.accounts.models import ApiToken, Lab, Membership, SshKey, User


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


class SshKeyInline(admin.TabularInline):
    model = SshKey
    extra = 0
    readonly_fields = ["fingerprint"]


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    # A site admin may vouch for an address (verified_email); a pending change waits for its link.
    fieldsets = [
        *BaseUserAdmin.fieldsets,
        ("LabGPU", {"fields": ["timezone", "language", "verified_email", "pending_email"]}),
    ]
    readonly_fields = ["pending_email"]
    list_display = ["username", "email", "is_staff", "timezone", "language"]
    inlines = [SshKeyInline]


@admin.register(Lab)
class LabAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "lab", "role", "max_hours_per_week", "max_concurrent_bookings"]
    list_filter = ["role", "lab"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "scopes", "expires_at", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "secret_hash", "last_used_at"]
    exclude: list[str] = []

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False  # tokens are minted through the API so their secret is shown exactly once

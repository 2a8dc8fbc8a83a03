from django.contrib import admin

from labgpu.invitations.models import Invitation


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["email", "lab", "role", "invited_by", "expires_at", "accepted_at", "revoked_at"]
    list_filter = ["lab"]
    search_fields = ["email"]
    readonly_fields = [
        "lab",
        "email",
        "role",
        "prefix",
        "invited_by",
        "expires_at",
        "accepted_at",
        "accepted_by",
        "revoked_at",
    ]
    exclude = ["token_hash"]

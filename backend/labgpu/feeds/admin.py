from django.contrib import admin

from labgpu.feeds.models import CalendarFeed


@admin.register(CalendarFeed)
class CalendarFeedAdmin(admin.ModelAdmin):
    list_display = ["id", "user", "kind", "pool", "prefix", "created_at", "revoked_at"]
    list_filter = ["kind"]
    search_fields = ["user__username", "prefix"]
    readonly_fields = ["secret_hash", "prefix", "created_at"]

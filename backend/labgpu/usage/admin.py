from django.contrib import admin

from labgpu.usage.models import UsageRecord


@admin.register(UsageRecord)
class UsageRecordAdmin(admin.ModelAdmin):
    list_display = [
        "node",
        "lab",
        "user",
        "pool",
        "started_at",
        "ended_at",
        "seconds",
        "charged_to_lab",
    ]
    list_filter = ["charged_to_lab", "lab"]

from django.contrib import admin

from labgpu.waitlist.models import WaitlistEntry


@admin.register(WaitlistEntry)
class WaitlistEntryAdmin(admin.ModelAdmin):
    list_display = ["id", "user", "lab", "pool", "gpu_model", "earliest_start", "status"]
    list_filter = ["status"]
    raw_id_fields = ["user", "lab", "pool", "booking"]

from django.contrib import admin

from labgpu.quotas.models import Quota, QuotaRequest


@admin.register(Quota)
class QuotaAdmin(admin.ModelAdmin):
    list_display = ["lab", "instance_type", "month", "gpu_hours"]
    list_filter = ["month", "instance_type", "lab"]


@admin.register(QuotaRequest)
class QuotaRequestAdmin(admin.ModelAdmin):
    list_display = ["lab", "instance_type", "month", "gpu_hours", "status", "requested_by"]
    list_filter = ["status"]

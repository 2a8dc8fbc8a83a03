from django.contrib import admin

from labgpu.health.models import HealthReport


@admin.register(HealthReport)
class HealthReportAdmin(admin.ModelAdmin):
    list_display = ["node", "instance_type", "verdict", "profile", "collected_at"]
    list_filter = ["verdict", "instance_type"]

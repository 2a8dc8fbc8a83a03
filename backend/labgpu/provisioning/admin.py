from django.contrib import admin

from labgpu.provisioning.models import Node


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["id", "booking", "attempt", "status", "provider_id", "public_ip", "failed_at"]
    list_filter = ["status", "provider_account"]
    readonly_fields = ["bootstrap_token_hash", "heartbeat_token_hash"]

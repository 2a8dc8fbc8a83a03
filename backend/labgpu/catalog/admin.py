from django.contrib import admin

from labgpu.catalog.models import Blackout, InstanceType, NodePool, ProviderAccount


@admin.register(ProviderAccount)
class ProviderAccountAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "api_base_url", "token_env_var", "is_active"]


@admin.register(InstanceType)
class InstanceTypeAdmin(admin.ModelAdmin):
    list_display = ["name", "provider_size", "gpu_model", "gpu_count", "gpu_arch", "price_per_hour"]
    list_filter = ["gpu_vendor", "provider_account"]
    prepopulated_fields = {"slug": ["name"]}


class BlackoutInline(admin.TabularInline):
    model = Blackout
    extra = 0


@admin.register(NodePool)
class NodePoolAdmin(admin.ModelAdmin):
    list_display = ["name", "instance_type", "region", "capacity", "requires_approval", "is_active"]
    list_filter = ["requires_approval", "region", "is_active"]
    filter_horizontal = ["allowed_labs"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [BlackoutInline]


@admin.register(Blackout)
class BlackoutAdmin(admin.ModelAdmin):
    list_display = ["pool", "start", "end", "reason"]
    list_filter = ["pool"]

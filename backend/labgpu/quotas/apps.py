from django.apps import AppConfig


class QuotasConfig(AppConfig):
    name = "labgpu.quotas"
    label = "quotas"

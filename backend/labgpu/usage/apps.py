from django.apps import AppConfig


class UsageConfig(AppConfig):
    name = "labgpu.usage"
    label = "usage"

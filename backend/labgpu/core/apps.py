from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "labgpu.core"
    label = "core"

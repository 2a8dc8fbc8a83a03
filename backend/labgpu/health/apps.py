from django.apps import AppConfig


class HealthConfig(AppConfig):
    name = "labgpu.health"
    label = "health"

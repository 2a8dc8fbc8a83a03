from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "labgpu.audit"
    label = "audit"

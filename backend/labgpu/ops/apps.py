from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "labgpu.ops"
    label = "ops"
    verbose_name = "Operations"

    def ready(self) -> None:
        from labgpu.ops import signals  # noqa: F401  (Celery task ids and latencies)

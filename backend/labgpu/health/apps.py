from django.apps import AppConfig


class HealthConfig(AppConfig):
    name = "labgpu.health"
    label = "health"

    def ready(self) -> None:
        from labgpu.core.reasons import FAILED_CHECKS, register_localizer
        from labgpu.health.finding_texts import localize_failed_checks

        register_localizer(FAILED_CHECKS, localize_failed_checks)

from django.apps import AppConfig


class SsoConfig(AppConfig):
    name = "labgpu.sso"
    label = "sso"
    verbose_name = "Single sign-on"

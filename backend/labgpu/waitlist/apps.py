from django.apps import AppConfig


class WaitlistConfig(AppConfig):
    name = "labgpu.waitlist"
    label = "waitlist"

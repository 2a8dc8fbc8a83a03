from django.apps import AppConfig


class FeedsConfig(AppConfig):
    name = "labgpu.feeds"
    label = "feeds"

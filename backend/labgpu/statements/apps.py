from django.apps import AppConfig


class StatementsConfig(AppConfig):
    name = "labgpu.statements"
    label = "statements"

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "labgpu.accounts"
    label = "accounts"

from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "labgpu.chat"
    label = "chat"
    verbose_name = "Chat notifications"

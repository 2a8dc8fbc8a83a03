from django.apps import AppConfig


class BudgetsConfig(AppConfig):
    name = "labgpu.budgets"
    label = "budgets"

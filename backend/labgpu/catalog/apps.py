from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "labgpu.catalog"
    label = "catalog"

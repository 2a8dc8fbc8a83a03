from django.apps import AppConfig


class ProvisioningConfig(AppConfig):
    name = "labgpu.provisioning"
    label = "provisioning"

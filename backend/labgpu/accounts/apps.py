from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class AccountsConfig(AppConfig):
    default = True  # this module also defines the admin's config
    name = "labgpu.accounts"
    label = "accounts"


class LabGpuAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin whose default site signs in through labgpu.accounts.login_limits."""

    default = False
    default_site = "labgpu.accounts.admin_site.LabGpuAdminSite"

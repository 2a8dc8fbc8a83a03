from django.apps import AppConfig


class DirectoryConfig(AppConfig):
    """LDAP / Active Directory sign-in and the periodic directory sync (issue 16 item 2)."""

    name = "labgpu.directory"
    label = "directory"

from django.conf import settings
from django.db import models

from labgpu.core.models import BaseModel


class DirectoryAccount(BaseModel):
    """A user the LDAP directory vouches for: made at their first LDAP sign-in, refreshed at each
    sign-in and by the periodic sync, which deactivates the user when the directory no longer
    knows them (`deactivated_at`) and reactivates them only if it was the sync that did so."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="directory_account"
    )
    dn = models.CharField(max_length=512)
    # The group names and DNs seen at the last sync, for the admin and for support questions.
    groups = models.JSONField(default=list)
    last_synced_at = models.DateTimeField(db_index=True)
    deactivated_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.dn

from django.conf import settings
from django.db import models
from django.db.models import Q

from labgpu.sso.models import IdentityLink


class DirectoryAccount(IdentityLink):
    """A user the LDAP directory vouches for, bound by the directory's identity of the entry
    (invariant I-10): `entryUUID` (RFC 4530; Active Directory's objectGUID) when the directory
    has one, else the DN. Made at the first LDAP sign-in — a new account, never one found by
    username — refreshed at each sign-in and by the periodic sync, which deactivates the user when
    the directory no longer knows them (`deactivated_at`) and reactivates them only if it was the
    sync that did so."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="directory_account"
    )
    # Which directory (LABGPU_LDAP_DIRECTORY_ID, by default the server URI).
    directory = models.CharField(max_length=255, blank=True, default="")
    dn = models.CharField(max_length=512)
    entry_uuid = models.CharField(max_length=64, blank=True, default="")
    # The name the person signs in with at the directory, which the sync looks them up by; the
    # LabGPU username may be a variant of it (labgpu.sso.usernames).
    login_name = models.CharField(max_length=150, blank=True, default="")
    # The group DNs seen at the last sync, for the admin and for support questions.
    groups = models.JSONField(default=list)
    last_synced_at = models.DateTimeField(db_index=True)
    deactivated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["directory", "entry_uuid"],
                condition=~Q(entry_uuid=""),
                name="directoryaccount_unique_entry_uuid",
            ),
        ]

    def __str__(self) -> str:
        return self.dn

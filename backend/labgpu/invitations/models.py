from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from labgpu.accounts.models import Lab, Membership
from labgpu.core.models import BaseModel
from labgpu.core.timeutils import now


class Invitation(BaseModel):
    """An e-mailed link that lets whoever holds it join `lab` once, before `expires_at`.

    Only a SHA-256 of the link's secret is stored (the secret has 256 bits, as API tokens do).
    Accepting and revoking are each one conditional UPDATE on a pending row, so a link is used at
    most once even when two people click it at the same moment."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        ACCEPTED = "accepted", _("Accepted")
        REVOKED = "revoked", _("Revoked")
        EXPIRED = "expired", _("Expired")

    lab = models.ForeignKey(Lab, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(
        max_length=16, choices=Membership.Role.choices, default=Membership.Role.MEMBER
    )
    prefix = models.CharField(max_length=16, db_index=True)
    token_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="accepted_invitations",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    @property
    def status(self) -> str:
        if self.accepted_at is not None:
            return self.Status.ACCEPTED
        if self.revoked_at is not None:
            return self.Status.REVOKED
        if self.expires_at <= now():
            return self.Status.EXPIRED
        return self.Status.PENDING

    def __str__(self) -> str:
        return f"{self.email} → {self.lab} ({self.status})"

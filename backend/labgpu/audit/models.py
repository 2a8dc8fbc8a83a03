from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    """Who did what to which object, when. Append-only: written by services, never edited."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    action = models.CharField(max_length=64, db_index=True)
    target_type = models.CharField(max_length=64)
    target_id = models.CharField(max_length=64)
    lab = models.ForeignKey(
        "accounts.Lab", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["target_type", "target_id"])]

    def __str__(self) -> str:
        target = f"{self.target_type}#{self.target_id}"
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor} {self.action} {target}"

from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from labgpu.core import timeutils


class CalendarFeed(models.Model):
    """An ICS subscription URL. The secret in the URL is the only credential (calendar apps
    cannot send headers), so only its SHA-256 is stored; revoking it makes the URL 404 at once.

    A `pool` feed shows other labs' bookings only as anonymous "Busy" blocks (I-6).
    """

    class Kind(models.TextChoices):
        USER = "user", _("My bookings")
        POOL = "pool", _("Pool")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="calendar_feeds"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices)
    pool = models.ForeignKey(
        "catalog.NodePool",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="calendar_feeds",
    )
    # Made with an API token (scope `feeds`): the feed dies with it, revoked or expired. Made in a
    # signed-in session: null, and the feed lives until revoked itself.
    created_by_token = models.ForeignKey(
        "accounts.ApiToken",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="calendar_feeds",
    )
    prefix = models.CharField(max_length=16)
    secret_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(kind="user") & Q(pool__isnull=True))
                | (Q(kind="pool") & Q(pool__isnull=False)),
                name="calendarfeed_pool_iff_pool_kind",
            )
        ]

    def __str__(self) -> str:
        target = self.pool.name if self.pool_id and self.pool else self.user
        return f"{self.kind} feed of {target} ({self.prefix}…)"

    @property
    def ended_at(self) -> datetime | None:
        """When the feed stopped working: revoked itself, or its token revoked or expired."""
        moments = [self.revoked_at]
        token = self.created_by_token
        if token is not None:
            moments.append(token.revoked_at)
            if token.expires_at is not None and token.expires_at <= timeutils.now():
                moments.append(token.expires_at)
        return min((m for m in moments if m is not None), default=None)

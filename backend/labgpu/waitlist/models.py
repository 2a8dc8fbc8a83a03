from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from labgpu.core.models import BaseModel


class WaitlistEntry(BaseModel):
    """A member waits for [earliest_start, latest_end) to have room for `duration_minutes` in
    `pool`, or in any pool of `gpu_model` their lab may book.

    First come, first served: entries are offered freed capacity in id order
    (labgpu.waitlist.services.waitlist_promote). An offer is a real booking in status `offered`
    (`booking`), made by the one rulebook (bookings.services.book) and holding its slot in the
    database until `offer_expires_at`; with `auto_book` the booking is made outright instead.
    """

    class Status(models.TextChoices):
        WAITING = "waiting", _("Waiting")
        OFFERED = "offered", _("Offered")
        BOOKED = "booked", _("Booked")
        DECLINED = "declined", _("Declined")
        LAPSED = "lapsed", _("Offer not taken in time")
        LEFT = "left", _("Left the waitlist")
        CLOSED = "closed", _("Window passed")

    # What counts against the per-user and per-lab caps.
    ACTIVE_STATUSES = (Status.WAITING, Status.OFFERED)

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="waitlist_entries"
    )
    lab = models.ForeignKey(
        "accounts.Lab", on_delete=models.CASCADE, related_name="waitlist_entries"
    )
    pool = models.ForeignKey(
        "catalog.NodePool",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="waitlist_entries",
    )
    gpu_model = models.CharField(max_length=64, blank=True)
    earliest_start = models.DateTimeField()
    latest_end = models.DateTimeField()
    duration_minutes = models.PositiveIntegerField()
    auto_book = models.BooleanField(default=False)
    purpose = models.CharField(max_length=500, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.WAITING)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    # The offer (status `offered`) or the booking made (`booked`).
    booking = models.ForeignKey(
        "bookings.Booking",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="waitlist_entries",
    )
    offered_at = models.DateTimeField(null=True, blank=True)
    offer_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(
                fields=["pool", "id"],
                condition=Q(status="waiting"),
                name="waitlist_waiting_pool",
            ),
            models.Index(
                fields=["gpu_model", "id"],
                condition=Q(status="waiting"),
                name="waitlist_waiting_model",
            ),
            models.Index(
                fields=["offer_expires_at"],
                condition=Q(status="offered"),
                name="waitlist_open_offers",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=(Q(pool__isnull=False) & Q(gpu_model=""))
                | (Q(pool__isnull=True) & ~Q(gpu_model="")),
                name="waitlist_pool_or_model",
            ),
            models.CheckConstraint(
                condition=Q(latest_end__gt=F("earliest_start")), name="waitlist_window_ordered"
            ),
            # An entry holds at most one offer or booking, and an offer belongs to one entry.
            models.UniqueConstraint(
                fields=["booking"],
                condition=Q(booking__isnull=False),
                name="waitlist_one_entry_per_booking",
            ),
        ]

    def __str__(self) -> str:
        target = self.pool or self.gpu_model
        return f"Waitlist #{self.pk} {target} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES

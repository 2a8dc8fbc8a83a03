from django.db import models

from labgpu.core.models import BaseModel


class StatementDelivery(BaseModel):
    """The monthly statement of one lab sent to its lab admins: one row per lab and month.

    Delivery is at least once: a run claims the row for a lease (`claimed_until`), sends, and
    only then sets `sent_at`. A worker killed between the claim and the send leaves the row
    unsent with a lease that runs out, so a later hourly run sends it; `recipients` grows as
    each mail goes, so a retry does not mail an admin who already has it."""

    lab = models.ForeignKey("accounts.Lab", on_delete=models.CASCADE, related_name="+")
    month = models.DateField(help_text="The first day of the month the statement covers.")
    sent_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    #: why the last attempt did not finish (an exception's class, never its text: no secrets)
    last_error = models.CharField(max_length=200, blank=True)
    recipients = models.JSONField(default=list, blank=True)
    total = models.DecimalField(max_digits=14, decimal_places=2, default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["lab", "month"], name="statement_sent_once")]

    def __str__(self) -> str:
        return f"{self.lab_id} {self.month:%Y-%m}"

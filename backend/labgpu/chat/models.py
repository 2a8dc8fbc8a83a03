"""Chat notification channels (Slack, Feishu/Lark, DingTalk, WeCom, a signed JSON webhook) and
the log of what was delivered to each.

A channel belongs to a user (their own) or to a lab (its lab admins manage it), never both. Its
webhook URL and signing secret are secrets: they are stored encrypted (labgpu.chat.crypto) and the
API shows only `hint`.
"""

from django.conf import settings
from django.db import models

from labgpu.core.models import BaseModel


class Event(models.TextChoices):
    BOOKING_READY = "booking_ready", "Node ready"
    BOOKING_ENDING_SOON = "booking_ending_soon", "Booking ending soon"
    BOOKING_FAILED = "booking_failed", "Booking failed or node replaced"
    APPROVAL_NEEDED = "approval_needed", "Approval needed"
    BOOKING_DECIDED = "booking_decided", "Booking approved or rejected"
    QUOTA_THRESHOLD = "quota_threshold", "Quota at 80 % / 100 %"
    BUDGET_THRESHOLD = "budget_threshold", "Budget at 50 % / 80 % / 100 %"
    IDLE_WARNING = "idle_warning", "Idle warning"
    VOLUME_NEAR_FULL = "volume_near_full", "Volume near full"
    WAITLIST_OFFER = "waitlist_offer", "Waitlist offer or booking"
    TEST = "test", "Test message"


SUBSCRIBABLE_EVENTS = [event.value for event in Event if event != Event.TEST]


def all_events() -> list[str]:
    return list(SUBSCRIBABLE_EVENTS)


class ChatChannel(BaseModel):
    class Kind(models.TextChoices):
        SLACK = "slack", "Slack incoming webhook"
        FEISHU = "feishu", "Feishu / Lark custom bot"
        DINGTALK = "dingtalk", "DingTalk robot"
        WECOM = "wecom", "WeCom group bot"
        WEBHOOK = "webhook", "Generic JSON webhook (HMAC-SHA256)"

    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="chat_channels",
    )
    lab = models.ForeignKey(
        "accounts.Lab",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="chat_channels",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Fernet token of {"url": …, "secret": …}; never leaves the server.
    secret_box = models.TextField()
    hint = models.CharField(max_length=200)
    events = models.JSONField(default=all_events)
    language = models.CharField(
        max_length=16, choices=[("en", "English"), ("zh-hans", "简体中文")], default="en"
    )
    timezone = models.CharField(max_length=64, default="UTC")
    # Off: the channel keeps its settings and log but is sent nothing (a test message still goes).
    enabled = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                name="chat_channel_one_owner",
                condition=(
                    models.Q(user__isnull=False, lab__isnull=True)
                    | models.Q(user__isnull=True, lab__isnull=False)
                ),
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class ChatDelivery(BaseModel):
    """One message to one channel. Attempts are counted here; the task that sends it is safe to
    run twice (a sent or finally failed delivery is left alone)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RETRYING = "retrying", "Retrying"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    channel = models.ForeignKey(ChatChannel, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=32, choices=Event.choices)
    title = models.CharField(max_length=300)
    text = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    http_status = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["channel", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.event} → {self.channel_id} ({self.status})"

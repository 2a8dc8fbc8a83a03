"""Migration chat 0006 on a database holding channels made before `budget_threshold` existed
(chat 0003): those that take quota alerts are subscribed to budget alerts too, the others are left
as they chose. Rows are written with the historical model of 0005, read after 0006 with today's."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from labgpu.chat.models import ChatChannel

BEFORE = [("chat", "0005_subscribe_waitlist_offer")]
AFTER = [("chat", "0006_subscribe_budget_threshold")]

# What a channel made before 0003 with every event held (the default then), as 0005 left it.
ALL_BEFORE_0003 = [
    "booking_ready",
    "booking_ending_soon",
    "booking_failed",
    "approval_needed",
    "booking_decided",
    "quota_threshold",
    "idle_warning",
    "volume_near_full",
    "waitlist_offer",
]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def before(transactional_db):
    apps = migrate(BEFORE)
    yield apps
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


@pytest.mark.slow
def test_old_channels_taking_quota_alerts_get_the_budget_threshold_event(before, alice, vision_lab):
    Channel = before.get_model("chat", "ChatChannel")

    def channel(name, events, **owner):
        return Channel.objects.create(
            name=name, kind="slack", secret_box="x", hint="h", events=events, **owner
        ).pk

    every = channel("every", ALL_BEFORE_0003, lab_id=vision_lab.pk)
    quota_only = channel("quota", ["quota_threshold"], lab_id=vision_lab.pk)
    bookings_only = channel("mine", ["booking_ready", "booking_decided"], user_id=alice.pk)
    nothing = channel("muted", [], user_id=alice.pk)
    already = channel("already", ["budget_threshold"], lab_id=vision_lab.pk)

    migrate(AFTER)

    events = dict(ChatChannel.objects.values_list("pk", "events"))
    assert events[every] == [
        "booking_ready",
        "booking_ending_soon",
        "booking_failed",
        "approval_needed",
        "booking_decided",
        "quota_threshold",
        "budget_threshold",
        "idle_warning",
        "volume_near_full",
        "waitlist_offer",
    ]
    assert events[quota_only] == ["quota_threshold", "budget_threshold"]
    assert events[bookings_only] == ["booking_ready", "booking_decided"]
    assert events[nothing] == []
    assert events[already] == ["budget_threshold"]
    # What the sender asks (chat.services.chat_notify): the channels subscribed to the event.
    subscribed = set(
        ChatChannel.objects.filter(events__contains=["budget_threshold"]).values_list(
            "pk", flat=True
        )
    )
    assert subscribed == {every, quota_only, already}

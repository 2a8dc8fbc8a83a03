"""Migration chat 0005 on a database holding channels made before `waitlist_offer` existed: those
that take the booker's own booking news are subscribed to it, the others are left as they chose.
Rows are written with the historical model of 0004, read after 0005 with today's."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from labgpu.chat.models import ChatChannel

BEFORE = [("chat", "0004_waitlist_offer_event")]
AFTER = [("chat", "0005_subscribe_waitlist_offer")]

# What a channel made before 0004 with every event held (the default then).
ALL_BEFORE = [
    "booking_ready",
    "booking_ending_soon",
    "booking_failed",
    "approval_needed",
    "booking_decided",
    "quota_threshold",
    "budget_threshold",
    "idle_warning",
    "volume_near_full",
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
def test_old_channels_taking_booking_news_get_the_waitlist_offer_event(before, alice, vision_lab):
    Channel = before.get_model("chat", "ChatChannel")

    def channel(name, events, **owner):
        return Channel.objects.create(
            name=name, kind="slack", secret_box="x", hint="h", events=events, **owner
        ).pk

    every = channel("every", ALL_BEFORE, user_id=alice.pk)
    ready_only = channel("ready", ["booking_ready"], user_id=alice.pk)
    decided = channel("decided", ["quota_threshold", "booking_decided"], lab_id=vision_lab.pk)
    lab_money = channel("money", ["quota_threshold", "budget_threshold"], lab_id=vision_lab.pk)
    nothing = channel("muted", [], user_id=alice.pk)
    already = channel("already", ["waitlist_offer"], user_id=alice.pk)

    migrate(AFTER)

    events = dict(ChatChannel.objects.values_list("pk", "events"))
    assert events[every] == [*ALL_BEFORE, "waitlist_offer"]
    assert events[ready_only] == ["booking_ready", "waitlist_offer"]
    assert events[decided] == ["booking_decided", "quota_threshold", "waitlist_offer"]
    assert events[lab_money] == ["quota_threshold", "budget_threshold"]
    assert events[nothing] == []
    assert events[already] == ["waitlist_offer"]
    # What the sender asks (chat.services.chat_notify): the channels subscribed to the event.
    subscribed = set(
        ChatChannel.objects.filter(events__contains=["waitlist_offer"]).values_list("pk", flat=True)
    )
    assert subscribed == {every, ready_only, decided, already}

"""Chat migrations that subscribe the channels made before an event existed (ChatChannel.events
lists them explicitly): 0005 (`waitlist_offer`) and 0006 (`budget_threshold`). Rows are written
with the historical model of the migration before, read after it with today's: the channels that
take comparable news get the new event, the others are left as they chose."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from labgpu.chat.models import ChatChannel

# What a channel made before 0004 with every event held (the default then).
ALL_BEFORE_0004 = [
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
# What a channel made before 0003 with every event held, as 0005 left it.
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
def migrated_back(transactional_db):
    """Migrate chat back to a migration (returns its historical apps); forward again after."""
    yield lambda name: migrate([("chat", name)])
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def channel_maker(apps):
    """Make a channel with the historical model; returns its id."""
    Channel = apps.get_model("chat", "ChatChannel")

    def channel(name, events, **owner):
        return Channel.objects.create(
            name=name, kind="slack", secret_box="x", hint="h", events=events, **owner
        ).pk

    return channel


@pytest.mark.slow
def test_old_channels_taking_booking_news_get_the_waitlist_offer_event(
    migrated_back, alice, vision_lab
):
    channel = channel_maker(migrated_back("0004_waitlist_offer_event"))

    every = channel("every", ALL_BEFORE_0004, user_id=alice.pk)
    ready_only = channel("ready", ["booking_ready"], user_id=alice.pk)
    decided = channel("decided", ["quota_threshold", "booking_decided"], lab_id=vision_lab.pk)
    lab_money = channel("money", ["quota_threshold", "budget_threshold"], lab_id=vision_lab.pk)
    nothing = channel("muted", [], user_id=alice.pk)
    already = channel("already", ["waitlist_offer"], user_id=alice.pk)

    migrate([("chat", "0005_subscribe_waitlist_offer")])

    events = dict(ChatChannel.objects.values_list("pk", "events"))
    assert events[every] == [*ALL_BEFORE_0004, "waitlist_offer"]
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


@pytest.mark.slow
def test_old_channels_taking_quota_alerts_get_the_budget_threshold_event(
    migrated_back, alice, vision_lab
):
    channel = channel_maker(migrated_back("0005_subscribe_waitlist_offer"))

    every = channel("every", ALL_BEFORE_0003, lab_id=vision_lab.pk)
    quota_only = channel("quota", ["quota_threshold"], lab_id=vision_lab.pk)
    bookings_only = channel("mine", ["booking_ready", "booking_decided"], user_id=alice.pk)
    nothing = channel("muted", [], user_id=alice.pk)
    already = channel("already", ["budget_threshold"], lab_id=vision_lab.pk)

    migrate([("chat", "0006_subscribe_budget_threshold")])

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

"""Channels made before 0003 list their events explicitly (ChatChannel.events), so none of them
heard of `budget_threshold`: a lab that had chosen to hear when its quota runs low got no chat
message when its budget crossed 50, 80 or 100 %. Subscribe every channel that takes quota alerts
to it, as a new channel would be (0005 did the same for `waitlist_offer`).
"""

from django.db import migrations

from labgpu.chat.migrations._subscribe import subscribe_where_comparable

NEW = "budget_threshold"
# Channels subscribed to this get NEW: a budget alert is the money news a quota alert is.
COMPARABLE = ("quota_threshold",)
# The events in the order the API keeps them (chat.services._clean_events), as of 0005.
ORDER = (
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
)


def subscribe_budget_threshold(apps, schema_editor):
    subscribe_where_comparable(apps, event=NEW, comparable=COMPARABLE, order=ORDER)


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0005_subscribe_waitlist_offer"),
    ]

    operations = [
        # Backwards: nothing to undo; 0003 knows the event, and a channel may keep it.
        migrations.RunPython(subscribe_budget_threshold, migrations.RunPython.noop),
    ]

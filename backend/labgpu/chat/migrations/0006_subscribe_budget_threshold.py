"""Channels made before 0003 list their events explicitly (ChatChannel.events), so none of them
heard of `budget_threshold`: a lab that had chosen to hear when its quota runs low got no chat
message when its budget crossed 50, 80 or 100 %. Subscribe every channel that takes quota alerts
to it, as a new channel would be (0005 did the same for `waitlist_offer`).
"""

from django.db import migrations

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
    ChatChannel = apps.get_model("chat", "ChatChannel")
    for channel in ChatChannel.objects.only("pk", "events").iterator():
        events = list(channel.events or [])
        if NEW in events or not any(event in events for event in COMPARABLE):
            continue
        wanted = {*events, NEW}
        channel.events = [event for event in ORDER if event in wanted] + [
            event for event in events if event not in ORDER
        ]
        ChatChannel.objects.filter(pk=channel.pk).update(events=channel.events)


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0005_subscribe_waitlist_offer"),
    ]

    operations = [
        # Backwards: nothing to undo; 0003 knows the event, and a channel may keep it.
        migrations.RunPython(subscribe_budget_threshold, migrations.RunPython.noop),
    ]

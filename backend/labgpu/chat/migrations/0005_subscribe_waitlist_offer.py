"""Channels made before 0004 list their events explicitly (ChatChannel.events), so none of them
heard of `waitlist_offer`: a member who had chosen "my bookings' news" got no chat message when a
waitlist offered or booked them a slot. Subscribe every channel that takes the booker's own
booking news (node ready, or a booking approved or rejected) to it, as a new channel would be.
"""

from django.db import migrations

from labgpu.chat.migrations._subscribe import subscribe_where_comparable

NEW = "waitlist_offer"
# Channels subscribed to any of these get NEW: an offer, or a booking made from the waitlist, is
# news of the booker's own booking.
COMPARABLE = ("booking_ready", "booking_decided")
# The events in the order the API keeps them (chat.services._clean_events), as of 0004.
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


def subscribe_waitlist_offer(apps, schema_editor):
    subscribe_where_comparable(apps, event=NEW, comparable=COMPARABLE, order=ORDER)


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0004_waitlist_offer_event"),
    ]

    operations = [
        # Backwards: nothing to undo; 0004 knows the event, and a channel may keep it.
        migrations.RunPython(subscribe_waitlist_offer, migrations.RunPython.noop),
    ]

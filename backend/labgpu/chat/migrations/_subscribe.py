"""Subscribing the channels made before an event existed (chat 0005, 0006). ChatChannel.events
lists a channel's events explicitly, so a new event reaches none of the channels made before it;
each migration names the events whose subscribers would want the new one. Django's migration
loader skips this module (its name begins with `_`)."""


def subscribe_where_comparable(apps, *, event, comparable, order):
    """Add `event` to every channel subscribed to any of `comparable`, keeping `order` (the order
    the API keeps events in, as of the migration) and any event it does not know at the end."""
    ChatChannel = apps.get_model("chat", "ChatChannel")
    for channel in ChatChannel.objects.only("pk", "events").iterator():
        events = list(channel.events or [])
        if event in events or not any(name in events for name in comparable):
            continue
        wanted = {*events, event}
        ordered = [name for name in order if name in wanted]
        ordered += [name for name in events if name not in order]
        ChatChannel.objects.filter(pk=channel.pk).update(events=ordered)

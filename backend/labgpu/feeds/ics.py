"""RFC 5545 output for calendar feeds, built with `icalendar`. All times are UTC (`…Z`), so no
VTIMEZONE is needed; X-WR-TIMEZONE tells calendar apps which zone to show them in.

A recurring series (issue 25) is written expanded: one VEVENT per occurrence, no RRULE. Each
occurrence is its own booking with its own status, times and node; one moved, cancelled or
refused would otherwise need an EXDATE or a RECURRENCE-ID override, and a calendar client that
applies those differently would show a slot the pool does not hold. Expanded, what a client
imports is the bookings table itself (test_feeds.py expands the feed as a client would and
compares it with the rows). Other labs' occurrences stay anonymous busy blocks: that they form a
series is not said either (I-6).
"""

import hashlib
import hmac
from collections.abc import Iterable

from django.conf import settings
from icalendar import Calendar, Event

from labgpu.bookings.models import Booking
from labgpu.core.timeutils import now
from labgpu.feeds.models import CalendarFeed

UID_DOMAIN = "labgpu"
STATUS_MAP = {
    Booking.Status.PENDING: "TENTATIVE",
}


def _busy_uid(booking: Booking) -> str:
    # Stable per booking, yet reveals neither its id nor its lab (I-6).
    digest = hmac.new(
        settings.SECRET_KEY.encode(), f"busy-{booking.pk}".encode(), hashlib.sha256
    ).hexdigest()[:24]
    return f"busy-{digest}@{UID_DOMAIN}"


def _event(booking: Booking, *, detailed: bool) -> Event:
    event = Event()
    event.add("dtstart", booking.start)
    event.add("dtend", booking.actual_end)  # a booking ended early frees the calendar then
    event.add("dtstamp", booking.updated_at or now())
    event.add("status", STATUS_MAP.get(booking.status, "CONFIRMED"))
    event.add("transp", "OPAQUE")
    if detailed:
        event.add("uid", f"booking-{booking.pk}@{UID_DOMAIN}")
        title = booking.pool.name
        if booking.purpose:
            title = f"{title}: {booking.purpose}"
        event.add("summary", title)
        description = (
            f"Booking #{booking.pk} · {booking.lab.name} · {booking.user.username} · "
            f"{booking.get_status_display()}"
        )
        if booking.series_id:
            description += f" · series #{booking.series_id}"
        event.add("description", description)
        event.add("categories", [booking.pool.name])
    else:
        event.add("uid", _busy_uid(booking))
        event.add("summary", "Busy")
        event.add("class", "CONFIDENTIAL")
    return event


def feed_calendar(
    feed: CalendarFeed, bookings: Iterable[Booking], *, own_lab_ids: set[int]
) -> bytes:
    calendar = Calendar()
    calendar.add("prodid", "-//LabGPU//Booking feed//EN")
    calendar.add("version", "2.0")
    calendar.add("calscale", "GREGORIAN")
    name = f"LabGPU · {feed.pool.name}" if feed.pool_id and feed.pool else "LabGPU · my bookings"
    calendar.add("x-wr-calname", name)
    calendar.add("x-wr-timezone", feed.user.timezone)
    mine_only = feed.kind == CalendarFeed.Kind.USER  # a user feed holds only their bookings
    for booking in bookings:
        detailed = mine_only or booking.lab_id in own_lab_ids
        calendar.add_component(_event(booking, detailed=detailed))
    return calendar.to_ical()

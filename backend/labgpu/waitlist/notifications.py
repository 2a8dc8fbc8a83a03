"""Telling a waiting member that capacity freed for them: in the app's notification list, by
e-mail and on their chat channels, in their language and time zone (the booking notifications'
own machinery: labgpu.bookings.notifications, labgpu.chat)."""

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _

from labgpu.bookings.notifications import local_time, notify_person
from labgpu.chat.services import chat_notify
from labgpu.waitlist.models import WaitlistEntry


def waitlist_url() -> str:
    return f"{settings.LABGPU_PUBLIC_URL.rstrip('/')}/waitlist"


def waitlist_offered(entry: WaitlistEntry) -> None:
    """The entry was offered a held slot (or, opted in, booked): tell its owner."""
    booking = entry.booking
    if booking is None:
        return
    user = entry.user
    pool = booking.pool
    booked = entry.status == WaitlistEntry.Status.BOOKED
    with translation.override(user.language):
        times = {
            "pool": pool.name,
            "start": local_time(booking.start, user),
            "end": local_time(booking.end, user),
        }
        if booked:
            subject = _("Booked from the waitlist: %(pool)s") % {"pool": pool.name}
            body = _("%(pool)s, %(start)s – %(end)s is booked for you (booking #%(id)s).") % {
                **times,
                "id": booking.pk,
            }
        else:
            assert entry.offer_expires_at is not None
            subject = _("A slot is free for you in %(pool)s") % {"pool": pool.name}
            body = _(
                "%(pool)s, %(start)s – %(end)s is held for you until %(expires)s. Take it in "
                "LabGPU, or it passes to the next in line."
            ) % {**times, "expires": local_time(entry.offer_expires_at, user)}
        body += "\n\n" + _("Your waitlist: %(url)s") % {"url": waitlist_url()}
    notify_person(user, subject, body, booking)
    chat_notify(
        "waitlist_offer",
        user=user,
        context={
            "entry_id": entry.pk,
            "booking_id": booking.pk,
            "pool": pool.name,
            "start": booking.start,
            "end": booking.end,
            "expires_at": entry.offer_expires_at,
            "booked": booked,
            "url": waitlist_url(),
        },
    )

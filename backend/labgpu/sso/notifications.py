"""Emails a directory sync sends, in the recipient's language, times in their zone."""

from django.utils import translation
from django.utils.translation import gettext as _

from labgpu.accounts.models import Lab, User
from labgpu.bookings.models import Booking
from labgpu.bookings.notifications import _send, local_time


def bookings_cancelled_on_removal(*, user: User, lab: Lab, bookings: list[Booking]) -> None:
    with translation.override(user.language):
        subject = _("You left %(lab)s: %(count)s bookings were cancelled") % {
            "lab": lab.name,
            "count": len(bookings),
        }
        lines = [
            _(
                "The directory no longer lists you in %(lab)s, so its bookings of yours that had "
                "not started were cancelled:"
            )
            % {"lab": lab.name},
            "",
        ]
        lines += [
            f"  #{booking.pk} {booking.pool.name}: {local_time(booking.start, user)} – "
            f"{local_time(booking.end, user)}"
            for booking in bookings
        ]
    _send(user, subject, "\n".join(lines))

"""JupyterLab on a booking's node (issue 15): its secret token, and what its owner is shown.

The token is random per booking, sealed at rest (`core.sealed`), made the first time the node's
agent asks for it (the authenticated bootstrap), so no create path pays for it and cloud-init,
which the provider keeps, never holds it. Only the booking's owner reads it back: not labmates,
not lab admins, never a list, an audit event, a log line or a feed.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.utils.translation import gettext as _

from labgpu.bookings.models import Booking
from labgpu.core.errors import NotFound, NotPermitted
from labgpu.core.sealed import seal, unseal

PURPOSE = "booking-notebook-token"
# Where JupyterLab listens on the node: loopback only, reached through an SSH tunnel.
NOTEBOOK_PORT = 8888


def booking_notebook_token(*, booking: Booking) -> str:
    """The booking's notebook token, made (and sealed) on first use; the same one afterwards,
    also for a replacement node. Two agents asking at once agree: the write is conditional."""
    token = unseal(booking.notebook_token_sealed, purpose=PURPOSE)
    if token:
        return token
    Booking.objects.filter(
        pk=booking.pk, notebook_token_sealed=booking.notebook_token_sealed
    ).update(notebook_token_sealed=seal(secrets.token_urlsafe(32), purpose=PURPOSE))
    booking.refresh_from_db(fields=["notebook_token_sealed"])
    token = unseal(booking.notebook_token_sealed, purpose=PURPOSE)
    assert token, "a token was sealed just now under the current key"
    return token


@dataclass(frozen=True)
class NotebookAccess:
    state: str  # the agent's last report: "", starting, running, failed
    ready: bool
    local_port: int
    remote_port: int
    ssh_command: str | None = None
    tunnel_command: str | None = None
    url: str | None = None


def notebook_access(*, user: object, booking: Booking, local_port: int) -> NotebookAccess:
    """What the owner needs to open the booking's notebook; the commands and URL only once the
    booking is ready. Anyone else who may see the booking is refused (403)."""
    if booking.user_id != getattr(user, "pk", None):
        raise NotPermitted(
            _("Only the person who booked it sees the notebook's token."), code="not_booking_owner"
        )
    if not booking.jupyter:
        raise NotFound(_("This booking did not ask for JupyterLab."), code="no_notebook")
    node = booking.current_node
    state = node.notebook_state if node is not None else ""
    ssh = node.ssh_command if node is not None else None
    if booking.status != Booking.Status.READY or not ssh or not booking.notebook_token_sealed:
        return NotebookAccess(
            state=state, ready=False, local_port=local_port, remote_port=NOTEBOOK_PORT
        )
    token = booking_notebook_token(booking=booking)
    address = ssh.split(" ", 1)[1]
    return NotebookAccess(
        state=state,
        ready=True,
        local_port=local_port,
        remote_port=NOTEBOOK_PORT,
        ssh_command=ssh,
        tunnel_command=f"ssh -N -L {local_port}:127.0.0.1:{NOTEBOOK_PORT} {address}",
        url=f"http://127.0.0.1:{local_port}/lab?token={token}",
    )

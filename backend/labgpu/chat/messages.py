"""The text of each chat event, in the channel's language and time zone.

`context` carries plain values (ids, names, datetimes or ISO strings); the keys each event reads
are listed in EVENT_KEYS and in docs/chat.md, for the apps that call `chat_notify`.
"""

import zoneinfo
from datetime import datetime
from typing import Any

from django.utils import translation
from django.utils.translation import gettext as _

from labgpu.core.reasons import reason_in_language

EVENT_KEYS: dict[str, tuple[str, ...]] = {
    "booking_ready": ("booking_id", "pool", "ssh", "end", "url"),  # + notebook_tunnel
    "booking_ending_soon": ("booking_id", "end", "url"),
    "booking_failed": ("booking_id", "reason", "url"),
    "approval_needed": ("booking_id", "user", "pool", "start", "end", "url"),
    "booking_decided": ("booking_id", "approved", "pool", "start", "end", "reason", "url"),
    "quota_threshold": ("lab", "percent", "instance_type", "month"),
    "budget_threshold": ("lab", "scope", "percent", "amount", "currency", "period"),
    "idle_warning": ("booking_id", "idle_minutes", "ends_at", "url"),
    "volume_near_full": ("volume", "used_percent", "size_gb", "region"),
    "waitlist_offer": ("entry_id", "booking_id", "pool", "start", "end", "expires_at", "url"),
    "test": ("channel",),
}


def _time(value: Any, zone: str) -> str:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
    if not isinstance(value, datetime):
        return "-"
    local = value.astimezone(zoneinfo.ZoneInfo(zone or "UTC"))
    offset = local.strftime("%z")
    return _("%(time)s (%(zone)s, UTC%(offset)s)") % {
        "time": local.strftime("%Y-%m-%d %H:%M"),
        "zone": zone or "UTC",
        "offset": f"{offset[:3]}:{offset[3:]}",
    }


def _link(text: str, c: dict[str, Any]) -> str:
    if c.get("url"):
        return text + "\n" + _("Open the booking: %(url)s") % {"url": c["url"]}
    return text


def render(event: str, context: dict[str, Any], *, language: str, zone: str) -> tuple[str, str]:
    """(title, text) of `event` for a channel reading `language` in time zone `zone`."""
    c = {key: context.get(key, "-") for key in EVENT_KEYS.get(event, ())} | {
        key: value for key, value in context.items() if key not in EVENT_KEYS.get(event, ())
    }
    with translation.override(language):
        if event == "booking_ready":
            title = _("Your GPU node for booking #%(id)s is ready") % {"id": c["booking_id"]}
            text = _("%(pool)s. Connect with:\n%(ssh)s\nIt runs until %(end)s.") % {
                "pool": c["pool"],
                "ssh": c["ssh"],
                "end": _time(c["end"], zone),
            }
            if context.get("notebook_tunnel"):
                # Never the notebook URL: it carries the token only the owner may see in LabGPU.
                text += "\n" + _(
                    "JupyterLab: run %(tunnel)s, then open the notebook link on the booking page "
                    "(only you see its token)."
                ) % {"tunnel": context["notebook_tunnel"]}
            return title, _link(text, c)
        if event == "booking_ending_soon":
            title = _("Booking #%(id)s ends at %(end)s") % {
                "id": c["booking_id"],
                "end": _time(c["end"], zone),
            }
            text = _(
                "Save your work: the node is destroyed when the booking ends. "
                "You can extend the booking while capacity and quota allow."
            )
            return title, _link(text, c)
        if event == "booking_failed" and context.get("replaced"):
            title = _("Booking #%(id)s: replacing the node") % {"id": c["booking_id"]}
            text = _(
                "The node failed (%(reason)s); a new one is being set up. You get a message "
                "when it is ready."
            ) % {"reason": reason_in_language(str(c["reason"]))}
            return title, _link(text, c)
        if event == "booking_failed":
            title = _("Booking #%(id)s failed") % {"id": c["booking_id"]}
            text = _(
                "We could not give you a healthy node: %(reason)s\n"
                "You are not charged for failed nodes."
            ) % {"reason": reason_in_language(str(c["reason"]))}
            return title, _link(text, c)
        if event == "approval_needed":
            title = _("Booking #%(id)s needs approval") % {"id": c["booking_id"]}
            text = _("%(user)s asks for %(pool)s, %(start)s – %(end)s.") % {
                "user": c["user"],
                "pool": c["pool"],
                "start": _time(c["start"], zone),
                "end": _time(c["end"], zone),
            }
            return title, _link(text, c)
        if event == "booking_decided":
            if c["approved"] is True:
                title = _("Your booking #%(id)s was approved") % {"id": c["booking_id"]}
            else:
                title = _("Your booking #%(id)s was rejected") % {"id": c["booking_id"]}
            text = _("%(pool)s, %(start)s – %(end)s. %(reason)s") % {
                "pool": c["pool"],
                "start": _time(c["start"], zone),
                "end": _time(c["end"], zone),
                "reason": c["reason"] or "",
            }
            return title, _link(text.strip(), c)
        if event == "quota_threshold":
            title = _("%(lab)s has used %(percent)s%% of its %(type)s quota for %(month)s") % {
                "lab": c["lab"],
                "percent": c["percent"],
                "type": c["instance_type"],
                "month": c["month"],
            }
            return title, _("Lab admins can request more quota in LabGPU.")
        if event == "budget_threshold":
            title = _("%(scope)s has reached %(percent)s%% of its budget for %(period)s") % {
                "scope": c["scope"],
                "percent": c["percent"],
                "period": c["period"],
            }
            text = _(
                "Consumed, running and booked GPU time comes to %(percent)s%% of "
                "%(amount)s %(currency)s. Lab admins can raise the budget in LabGPU."
            ) % {"percent": c["percent"], "amount": c["amount"], "currency": c["currency"]}
            return title, text
        if event == "idle_warning":
            title = _("Booking #%(id)s: the GPUs are idle") % {"id": c["booking_id"]}
            text = _(
                "No GPU activity and no session for %(minutes)s minutes. Unless it is used again "
                "or you keep it, the booking ends at %(ends_at)s to free the GPUs for the lab."
            ) % {"minutes": c["idle_minutes"], "ends_at": _time(c["ends_at"], zone)}
            return title, _link(text, c)
        if event == "volume_near_full":
            title = _("Volume %(volume)s is %(percent)s%% full") % {
                "volume": c["volume"],
                "percent": c["used_percent"],
            }
            text = _("%(size)s GB in %(region)s. Delete data or ask a lab admin for more.") % {
                "size": c["size_gb"],
                "region": c["region"],
            }
            return title, text
        if event == "waitlist_offer" and context.get("booked"):
            title = _("Booked from the waitlist: %(pool)s") % {"pool": c["pool"]}
            text = _("%(start)s – %(end)s is booked for you (booking #%(id)s).") % {
                "start": _time(c["start"], zone),
                "end": _time(c["end"], zone),
                "id": c["booking_id"],
            }
            return title, _link(text, c)
        if event == "waitlist_offer":
            title = _("A slot is free for you in %(pool)s") % {"pool": c["pool"]}
            text = _(
                "%(start)s – %(end)s is held for you until %(expires)s. Take it in LabGPU, "
                "or it passes to the next in line."
            ) % {
                "start": _time(c["start"], zone),
                "end": _time(c["end"], zone),
                "expires": _time(c["expires_at"], zone),
            }
            return title, _link(text, c)
        if event == "test":
            title = _("LabGPU test message")
            text = _("Channel “%(channel)s” is set up: LabGPU notifications will arrive here.") % {
                "channel": c["channel"]
            }
            return title, text
    raise ValueError(f"unknown chat event {event!r}")

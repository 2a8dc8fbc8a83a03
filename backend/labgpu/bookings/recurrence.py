"""A series' occurrences from its rule, in the booker's time zone (RFC 5545 semantics, by
python-dateutil's rrule).

The rule is expanded over naive wall-clock times and each occurrence is then placed in the zone:
a weekly 09:00 in Europe/Berlin stays 09:00 on both sides of a DST change (08:00 UTC in winter,
07:00 UTC in summer). An occurrence lasts `duration` of real time, so one that spans a change
ends an hour earlier or later on the wall clock but books the same GPU-hours.

A wall time that a spring-forward skips (02:30 on the day clocks go from 02:00 to 03:00) is read
with the offset before the gap, as RFC 5545 §3.3.5 says, so it lands at 03:30; one that happens
twice (fall-back) is its first occurrence.
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from itertools import islice

from dateutil import rrule
from django.utils.translation import gettext as _

from labgpu.core.errors import ApplicationError

WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
FREQUENCIES = {"daily": rrule.DAILY, "weekly": rrule.WEEKLY, "monthly": rrule.MONTHLY}
MAX_OCCURRENCES = 104  # two years of a weekly run; a longer plan is two series


@dataclass(frozen=True)
class Recurrence:
    frequency: str  # daily | weekly | monthly
    timezone: str
    interval: int = 1
    weekdays: tuple[str, ...] = ()  # weekly: MO..SU (default: the first start's weekday)
    month_day: int | None = None  # monthly (default: the first start's day of the month)
    count: int | None = None
    until: date | None = None  # the last local date an occurrence may start on
    exceptions: frozenset[date] = field(default_factory=frozenset)  # local dates skipped


def zone_of(name: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ApplicationError(
            _("%(zone)s is not a time zone.") % {"zone": name}, code="invalid", field="timezone"
        ) from None


def local_instant(wall: datetime, tz: zoneinfo.ZoneInfo) -> datetime:
    """The UTC instant of the naive wall time `wall` in `tz` (fold=0: see the module docstring)."""
    return wall.replace(tzinfo=tz, fold=0).astimezone(UTC)


def occurrences(
    rule: Recurrence, *, first_start: datetime, duration: timedelta
) -> list[tuple[datetime, datetime]]:
    """Every occurrence [start, end) of the rule, in UTC, exceptions left out.

    Raises a field error when the rule asks for more than MAX_OCCURRENCES (an `until` far away,
    or a `count` too large), rather than booking only the first ones silently.
    """
    tz = zone_of(rule.timezone)
    local_first = first_start.astimezone(tz)
    wall = local_first.replace(tzinfo=None)
    kwargs: dict = {"dtstart": wall, "interval": rule.interval}
    if rule.frequency == "weekly":
        days = rule.weekdays or (WEEKDAYS[wall.weekday()],)
        kwargs["byweekday"] = [getattr(rrule, day) for day in days]
    elif rule.frequency == "monthly":
        kwargs["bymonthday"] = rule.month_day or wall.day
    if rule.until is not None:
        if rule.until < wall.date():
            raise ApplicationError(
                _("The series must end on or after its first day."),
                code="until_before_start",
                field="until",
            )
        kwargs["until"] = datetime.combine(rule.until, time.max)
    # One past the cap tells "too many" from "exactly the cap" without expanding an endless rule.
    limit = MAX_OCCURRENCES + 1 + len(rule.exceptions)
    if rule.count:
        kwargs["count"] = min(rule.count, limit)
    walls = list(islice(rrule.rrule(FREQUENCIES[rule.frequency], **kwargs), limit))
    if rule.until is None and rule.count is None:
        raise ApplicationError(
            _("Say how the series ends: a number of occurrences or a last day."),
            code="required",
            field="count",
        )
    kept = [w for w in walls if w.date() not in rule.exceptions]
    if len(kept) > MAX_OCCURRENCES:
        raise ApplicationError(
            _("A series has at most %(limit)s occurrences; this one would have more.")
            % {"limit": MAX_OCCURRENCES},
            code="too_many_occurrences",
            field="until" if rule.until is not None and not rule.count else "count",
            extra={"limit": MAX_OCCURRENCES},
        )
    out = []
    for w in kept:
        start = local_instant(w, tz)
        out.append((start, start + duration))
    return out

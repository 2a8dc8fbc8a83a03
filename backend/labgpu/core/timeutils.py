"""Time helpers. Everything is stored in UTC; naive datetimes are a bug (invariant I-7)."""

from datetime import UTC, date, datetime, timedelta

from django.utils import timezone

# Every datetime the API accepts (bodies, query parameters, filters, agent reports) lies in this
# range (docs/api.md): wide enough for any booking or record, narrow enough that grid and month
# arithmetic can never overflow datetime's year 1–9999 (`?start=9999-12-31…` was a 500).
EARLIEST_ACCEPTED = datetime(2000, 1, 1, tzinfo=UTC)
LATEST_ACCEPTED = datetime(2100, 1, 1, tzinfo=UTC)


def accepted_moment(moment: datetime) -> bool:
    """True for an aware datetime inside [EARLIEST_ACCEPTED, LATEST_ACCEPTED]."""
    try:
        return EARLIEST_ACCEPTED <= moment <= LATEST_ACCEPTED
    except (TypeError, OverflowError):
        return False


def now() -> datetime:
    return timezone.now()


def iso(moment: datetime) -> str:
    """As DRF's DateTimeField writes a moment (the server's zone is UTC): ISO 8601 with `Z`.

    Hot: a calendar's month formats a thousand of them, and a moment read from the database is
    already in UTC (`datetime.UTC`), so it is formatted as it is.
    """
    if moment.tzinfo is not UTC:
        # A naive one (a bug, I-7) is read as UTC, as DRF reads it in the server's zone.
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment.isoformat()[:-6] + "Z"


def is_aligned(moment: datetime, minutes: int) -> bool:
    """True when `moment` sits on a `minutes` grid counted from midnight UTC."""
    if minutes <= 1:
        return moment.second == 0 and moment.microsecond == 0
    midnight = moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return (moment - midnight) % timedelta(minutes=minutes) == timedelta(0)


def ceil_to_grid(moment: datetime, minutes: int) -> datetime:
    moment = moment.astimezone(UTC)
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    step = timedelta(minutes=max(minutes, 1))
    offset = moment - midnight
    remainder = offset % step
    return moment if remainder == timedelta(0) else moment + (step - remainder)


def month_start(moment: datetime | date) -> date:
    if isinstance(moment, datetime):
        moment = moment.astimezone(UTC).date()
    return moment.replace(day=1)


def next_month(first: date) -> date:
    return (first.replace(day=28) + timedelta(days=4)).replace(day=1)


def month_bounds(first: date) -> tuple[datetime, datetime]:
    start = datetime(first.year, first.month, 1, tzinfo=UTC)
    following = next_month(first)
    return start, datetime(following.year, following.month, 1, tzinfo=UTC)


def overlap(a_start: datetime, a_end: datetime, b_start: datetime, b_end: datetime) -> timedelta:
    return max(timedelta(0), min(a_end, b_end) - max(a_start, b_start))


def hours(delta: timedelta) -> float:
    return delta.total_seconds() / 3600

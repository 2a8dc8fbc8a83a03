"""Times on the command line: ISO 8601 with an offset, or local time in the user's zone (the
`timezone` of /api/v1/me/). Output is in that zone too."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo


class TimeError(ValueError):
    pass


def parse(text: str, zone: ZoneInfo) -> datetime:
    """`2026-12-01T09:00+08:00`, `2026-12-01T01:00Z`, or `2026-12-01 09:00` (local to `zone`).

    A local time that does not exist (the spring-forward gap) or exists twice (fall-back) is
    refused: booking the wrong hour would be worse than asking for an offset.
    """
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise TimeError(f"not an ISO 8601 time: {text!r}") from None
    if moment.tzinfo is not None:
        return moment
    first = moment.replace(tzinfo=zone, fold=0)
    second = moment.replace(tzinfo=zone, fold=1)
    round_trip = first.astimezone(UTC).astimezone(zone).replace(tzinfo=None)
    if round_trip != moment:
        raise TimeError(f"{text} does not exist in {zone.key} (clocks skip it); give an offset")
    if first.utcoffset() != second.utcoffset():
        raise TimeError(
            f"{text} happens twice in {zone.key} (clocks go back); give an offset, e.g. "
            f"{first.isoformat()} or {second.isoformat()}"
        )
    return first


def parse_api(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def show(value: str | datetime | None, zone: ZoneInfo) -> str:
    moment = parse_api(value) if isinstance(value, str) else value
    if moment is None:
        return "-"
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M%:z")


def parse_duration(text: str) -> timedelta:
    """`90` (minutes), `90m`, `4h`, `1.5h`, `2d`."""
    value = text.strip().lower()
    units = {"m": 1, "h": 60, "d": 1440}
    factor = units.get(value[-1:])
    number = value[:-1] if factor else value
    try:
        minutes = float(number) * (factor or 1)
    except ValueError:
        raise TimeError(f"not a duration: {text!r} (try 90m, 4h, 2d)") from None
    if minutes <= 0:
        raise TimeError(f"the duration must be positive: {text!r}")
    return timedelta(minutes=minutes)


def ceil_to_grid(moment: datetime, minutes: int) -> datetime:
    """Round up to the pool's grid, counted from midnight UTC as the server counts it."""
    moment = moment.astimezone(UTC)
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    step = timedelta(minutes=max(minutes, 1))
    remainder = (moment - midnight) % step
    return moment if remainder == timedelta(0) else moment + (step - remainder)

from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy
from django_filters.fields import IsoDateTimeField
from rest_framework import serializers

from labgpu.core.timeutils import EARLIEST_ACCEPTED, LATEST_ACCEPTED, accepted_moment

# Lazy, so each reader gets it in their language; DRF's fail() fills the {placeholders}.
OUT_OF_RANGE = gettext_lazy("Give a time between {earliest} and {latest} (UTC).")
RANGE = {"earliest": f"{EARLIEST_ACCEPTED:%Y-%m-%d}", "latest": f"{LATEST_ACCEPTED:%Y-%m-%d}"}
# The same text filled in, still lazy: a filter's form field raises it without DRF's fail().
OUT_OF_RANGE_FILLED = format_lazy(OUT_OF_RANGE, **RANGE)


class AwareDateTimeField(serializers.DateTimeField):
    """ISO 8601 with an explicit offset only: a naive datetime is ambiguous (I-7); and inside
    the accepted range (core.timeutils), so no grid or month arithmetic can overflow."""

    default_error_messages = {
        "naive_datetime": gettext_lazy(
            "Give the time zone offset, e.g. 2026-12-01T09:00:00+08:00 or …Z."
        ),
        "datetime_out_of_range": OUT_OF_RANGE,
    }

    def to_internal_value(self, value: object) -> datetime:
        if isinstance(value, str):
            try:
                parsed = datetime.fromisoformat(value.strip().replace("z", "Z"))
            except ValueError:
                self.fail("invalid", format="ISO 8601 with an offset")
            if timezone.is_naive(parsed):
                self.fail("naive_datetime")
        elif isinstance(value, datetime) and timezone.is_naive(value):
            self.fail("naive_datetime")
        moment = super().to_internal_value(value)
        if not accepted_moment(moment):
            self.fail("datetime_out_of_range", **RANGE)
        return moment


class AcceptedDateField(serializers.DateField):
    """A date (a quota month) inside the accepted range: month arithmetic can never overflow."""

    default_error_messages = {"date_out_of_range": OUT_OF_RANGE}

    def to_internal_value(self, value: object) -> date:
        day = super().to_internal_value(value)
        if not EARLIEST_ACCEPTED.date() <= day < LATEST_ACCEPTED.date():
            self.fail("date_out_of_range", **RANGE)
        return day


class UtcIsoDateTimeField(IsoDateTimeField):
    """A filter's ISO 8601 value, moved to UTC.

    Python accepts offsets up to ±23:59 but PostgreSQL refuses a timestamptz literal beyond ±15:59,
    so `?end_before=…+20:44` would reach the database as an error (a 500) instead of a filter.
    """

    def to_python(self, value: object) -> datetime | None:
        parsed = super().to_python(value)
        if parsed is None or timezone.is_naive(parsed):
            return parsed
        try:
            moment = parsed.astimezone(UTC)
        except OverflowError:
            raise ValidationError(self.error_messages["invalid"], code="invalid") from None
        if not accepted_moment(moment):
            raise ValidationError(OUT_OF_RANGE_FILLED, code="datetime_out_of_range")
        return moment


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


class IdFilter(django_filters.NumberFilter):
    """An object id in a query string: a whole number the database can hold (bigint), else 400.

    NumberFilter alone takes any decimal (`1e308`, `-4.5e-142`), which no id column can hold."""

    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", -(2**63))
        kwargs.setdefault("max_value", 2**63 - 1)
        super().__init__(*args, **kwargs)


MAX_ID = 2**63 - 1  # bigint: a larger id cannot exist, and must not reach the database


class OwnPrimaryKeyRelatedField(serializers.PrimaryKeyRelatedField):
    """An id among the objects the requester may name (`visible_to(user)`).

    An unknown id and another lab's read the same — 400 `does_not_exist`, with no name in the
    message — so an error reveals neither what other labs are called nor which ids exist. Ids are
    whole numbers in 1…2^63−1 (or such digits as text); `1e300`, `1.5`, `true` are refused before
    any query.
    """

    def __init__(self, *, visible_to: Callable[[Any], QuerySet], **kwargs: Any) -> None:
        self.visible_to = visible_to
        super().__init__(**kwargs)

    def get_queryset(self) -> QuerySet:
        request = self.context.get("request")
        user = getattr(request, "user", None)
        return self.visible_to(user) if user is not None else super().get_queryset().none()

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and data.isascii() and data.isdigit() and len(data) <= 19:
            data = int(data)
        if type(data) is not int:
            self.fail("incorrect_type", data_type=type(data).__name__)
        if not 1 <= data <= MAX_ID:
            self.fail("does_not_exist", pk_value=data)
        return super().to_internal_value(data)

from datetime import UTC, datetime
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone
from django_filters.fields import IsoDateTimeField
from rest_framework import serializers


class AwareDateTimeField(serializers.DateTimeField):
    """ISO 8601 with an explicit offset only: a naive datetime is ambiguous (I-7)."""

    default_error_messages = {
        "naive_datetime": "Give the time zone offset, e.g. 2026-12-01T09:00:00+08:00 or …Z.",
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
        return super().to_internal_value(value)


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
            return parsed.astimezone(UTC)
        except OverflowError:
            raise ValidationError(self.error_messages["invalid"], code="invalid") from None


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


class IdFilter(django_filters.NumberFilter):
    """An object id in a query string: a whole number the database can hold (bigint), else 400.

    NumberFilter alone takes any decimal (`1e308`, `-4.5e-142`), which SQLite cannot bind."""

    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", -(2**63))
        kwargs.setdefault("max_value", 2**63 - 1)
        super().__init__(*args, **kwargs)

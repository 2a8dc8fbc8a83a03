from datetime import datetime

from django.utils import timezone
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

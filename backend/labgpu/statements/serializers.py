import re
from datetime import date

from django.utils.translation import gettext as _
from rest_framework import serializers

from labgpu.core.timeutils import EARLIEST_ACCEPTED, LATEST_ACCEPTED

MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


class StatementQuerySerializer(serializers.Serializer):
    month = serializers.CharField(
        required=False, help_text="YYYY-MM (UTC months); default: the previous month."
    )
    language = serializers.ChoiceField(
        choices=["en", "zh-hans"], required=False, help_text="Default: the caller's language."
    )

    def validate_month(self, value: str) -> date:
        match = MONTH.match(value)
        if not match:
            raise serializers.ValidationError(
                serializers.ErrorDetail(_("Give the month as YYYY-MM."), code="invalid_month")
            )
        # Inside the accepted range (year 0000 is no date; 9999-12 would end in year 10000).
        if not EARLIEST_ACCEPTED.year <= int(match[1]) < LATEST_ACCEPTED.year:
            raise serializers.ValidationError(
                serializers.ErrorDetail(
                    _("Give a month from %(first)s to %(last)s.")
                    % {
                        "first": f"{EARLIEST_ACCEPTED:%Y-%m}",
                        "last": f"{LATEST_ACCEPTED.year - 1}-12",
                    },
                    code="month_out_of_range",
                )
            )
        return date(int(match[1]), int(match[2]), 1)


class MoneySerializer(serializers.Serializer):
    usd = serializers.DecimalField(max_digits=14, decimal_places=2)
    converted = serializers.DecimalField(
        max_digits=18, decimal_places=2, allow_null=True, help_text="In the display currency."
    )


class StatementLineSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["gpu", "storage"])
    user = serializers.CharField()
    cost_centre = serializers.CharField(allow_blank=True)
    pool = serializers.CharField(allow_blank=True)
    quantity = serializers.DecimalField(
        max_digits=16, decimal_places=2, help_text="GPU-hours (gpu) or GB-months (storage)."
    )
    amount = serializers.DecimalField(max_digits=14, decimal_places=2, help_text="USD")


class ConversionSerializer(serializers.Serializer):
    code = serializers.CharField()
    rate = serializers.DecimalField(max_digits=14, decimal_places=6)
    rate_date = serializers.DateField()


class StatementSerializer(serializers.Serializer):
    lab = serializers.IntegerField(source="lab.pk")
    lab_name = serializers.CharField(source="lab.name")
    month = serializers.DateField()
    currency = serializers.CharField(default="USD")
    lines = StatementLineSerializer(many=True)
    gpu_total = serializers.DecimalField(max_digits=14, decimal_places=2)
    storage_total = serializers.DecimalField(max_digits=14, decimal_places=2)
    total = serializers.DecimalField(max_digits=14, decimal_places=2)
    total_converted = serializers.SerializerMethodField()
    conversion = ConversionSerializer(allow_null=True)
    generated_at = serializers.DateTimeField()

    def get_total_converted(self, statement) -> str | None:  # type: ignore[no-untyped-def]
        value = statement.converted(statement.total)
        return None if value is None else str(value)

from django.utils.translation import gettext as _
from rest_framework import serializers

from labgpu.api.fields import AwareDateTimeField
from labgpu.usage.selectors import GROUPS


class UsageQuerySerializer(serializers.Serializer):
    start = AwareDateTimeField()
    end = AwareDateTimeField()
    group_by = serializers.CharField(
        default="lab,day", help_text=f"Comma-separated, from: {', '.join(GROUPS)}"
    )
    lab = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
    include_provider_cost = serializers.BooleanField(
        default=False, help_text="Site admins: also count failed nodes (the provider's cost)."
    )

    def validate_group_by(self, value: str) -> list[str]:
        groups = [part.strip() for part in value.split(",") if part.strip()]
        unknown = [group for group in groups if group not in GROUPS]
        if unknown or not groups or len(set(groups)) != len(groups):
            raise serializers.ValidationError(
                _("Choose distinct values from %(groups)s.") % {"groups": ", ".join(GROUPS)}
            )
        return groups

    def validate(self, attrs: dict) -> dict:
        if attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError(
                {
                    "end": [
                        serializers.ErrorDetail(
                            _("The end must be after the start."), code="end_before_start"
                        )
                    ]
                }
            )
        if (attrs["end"] - attrs["start"]).days > 400:
            raise serializers.ValidationError(
                {
                    "end": [
                        serializers.ErrorDetail(
                            _("Ask for at most %(days)s days.") % {"days": 400},
                            code="range_too_long",
                        )
                    ]
                }
            )
        return attrs


class UsageRowSerializer(serializers.Serializer):
    lab = serializers.IntegerField(required=False)
    lab_name = serializers.CharField(required=False)
    user = serializers.IntegerField(required=False)
    user_name = serializers.CharField(required=False)
    pool = serializers.IntegerField(required=False)
    pool_name = serializers.CharField(required=False)
    instance_type = serializers.IntegerField(required=False)
    instance_type_name = serializers.CharField(required=False)
    day = serializers.DateField(required=False)
    booking = serializers.IntegerField(required=False)
    booking_name = serializers.CharField(required=False)
    # null for usage booked to no cost centre (written as None; the field is absent unless asked).
    cost_centre = serializers.IntegerField(required=False)
    cost_centre_name = serializers.CharField(
        required=False, help_text="The cost centre's code; empty for usage booked to none."
    )
    gpu_hours = serializers.DecimalField(max_digits=14, decimal_places=2)
    cost = serializers.DecimalField(max_digits=14, decimal_places=2)
    seconds = serializers.IntegerField()
    booked_hours = serializers.FloatField(help_text="Node-hours metered (the booking's node up).")
    used_hours = serializers.FloatField(
        help_text="Of those, hours with any GPU busy, a process on a GPU or an SSH session."
    )
    average_utilisation_pct = serializers.FloatField(
        allow_null=True, help_text="Mean GPU utilisation over the heartbeats seen; null: none."
    )


class StorageQuerySerializer(serializers.Serializer):
    start = AwareDateTimeField()
    end = AwareDateTimeField()

    def validate(self, attrs: dict) -> dict:
        if attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError(
                {
                    "end": [
                        serializers.ErrorDetail(
                            _("The end must be after the start."), code="end_before_start"
                        )
                    ]
                }
            )
        return attrs


class StorageRowSerializer(serializers.Serializer):
    lab = serializers.IntegerField()
    lab_name = serializers.CharField()
    gb_months = serializers.DecimalField(max_digits=14, decimal_places=2)
    cost = serializers.DecimalField(max_digits=14, decimal_places=2)

from datetime import timedelta
from decimal import Decimal

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from labgpu.api.fields import AwareDateTimeField
from labgpu.bookings.placement.selectors import PlacementAsk
from labgpu.bookings.serializers import BookingCreateSerializer, WindowRefusalSerializer
from labgpu.core.timeutils import now

MAX_HOURS = Decimal(24 * 90)  # as the free-windows query's longest duration
MAX_REGIONS = 16
REGION_LENGTH = 32  # NodePool.region


class RegionField(serializers.RegexField):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(r"^[a-z0-9-]+$", max_length=REGION_LENGTH, **kwargs)


class PlacementAskSerializer(serializers.Serializer):
    """What a placement asks, as the query of the availability read and in the booking's body."""

    gpu_model = serializers.CharField(
        max_length=64, help_text="The instance types' GPU model, e.g. MI300X (any case)."
    )
    hours = serializers.DecimalField(
        max_digits=6,
        decimal_places=2,
        min_value=Decimal("0.01"),
        max_value=MAX_HOURS,
        help_text="How long, in hours (whole minutes: 1.5, 8).",
    )
    after = AwareDateTimeField(required=False, help_text="Earliest start (default: now).")
    before = AwareDateTimeField(
        required=False,
        help_text="Latest end (default: as far ahead as each pool takes bookings).",
    )
    gpu_count = serializers.IntegerField(
        min_value=1, max_value=64, required=False, help_text="Only instances of this many GPUs."
    )

    def validate_hours(self, value: Decimal) -> Decimal:
        if (value * 60) % 1:
            raise serializers.ValidationError(_("Give the hours in whole minutes."))
        return value

    def validate(self, attrs: dict) -> dict:
        before = attrs.get("before")
        if before is not None:
            earliest = max(attrs.get("after") or now(), now())
            if before - earliest < timedelta(minutes=int(attrs["hours"] * 60)):
                raise serializers.ValidationError(
                    {"before": [_("Leave at least the hours asked between the start and this.")]}
                )
        return attrs

    def ask(self, regions: list[str]) -> PlacementAsk:
        data = self.validated_data
        return PlacementAsk(
            gpu_model=data["gpu_model"].strip(),
            duration=timedelta(minutes=int(data["hours"] * 60)),
            after=data.get("after"),
            before=data.get("before"),
            regions=tuple(dict.fromkeys(regions)),
            gpu_count=data.get("gpu_count"),
        )


class PlacementQuerySerializer(PlacementAskSerializer):
    regions = serializers.CharField(
        required=False,
        max_length=(REGION_LENGTH + 1) * MAX_REGIONS,
        help_text="Comma-separated regions to consider (default: any region).",
    )
    lab = serializers.IntegerField(
        min_value=1,
        max_value=2**63 - 1,
        required=False,
        help_text="The lab that would book (needed when you are in several).",
    )
    count = serializers.IntegerField(
        min_value=1, max_value=50, required=False, default=10, help_text="At most this many."
    )

    def validate_regions(self, value: str) -> list[str]:
        regions = [region.strip().lower() for region in value.split(",") if region.strip()]
        field = RegionField()
        for region in regions:
            field.run_validation(region)
        if len(regions) > MAX_REGIONS:
            raise serializers.ValidationError(
                _("At most %(count)s regions.") % {"count": MAX_REGIONS}
            )
        return regions

    def placement(self) -> PlacementAsk:
        return self.ask(self.validated_data.get("regions") or [])


class PlacementBookSerializer(PlacementAskSerializer, BookingCreateSerializer):
    """Book the earliest window: a booking's body, with a placement instead of a pool and times."""

    pool = None  # type: ignore[assignment]
    start = None  # type: ignore[assignment]
    end = None  # type: ignore[assignment]
    regions = serializers.ListField(
        child=RegionField(),
        required=False,
        max_length=MAX_REGIONS,
        help_text="Regions to consider (default: any region).",
    )

    def placement(self) -> PlacementAsk:
        return self.ask([r.lower() for r in self.validated_data.get("regions") or []])


class PlacementWindowSerializer(serializers.Serializer):
    pool = serializers.IntegerField()
    pool_name = serializers.CharField()
    region = serializers.CharField()
    gpu_model = serializers.CharField()
    gpu_count = serializers.IntegerField()
    requires_approval = serializers.BooleanField(
        help_text="A booking here waits for a lab admin's approval."
    )
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    refused = WindowRefusalSerializer(
        allow_null=True,
        help_text="Why your own limits in the lab would refuse a booking of it; "
        "null: they would not.",
    )


class PlacementAvailabilitySerializer(serializers.Serializer):
    gpu_model = serializers.CharField()
    duration_minutes = serializers.IntegerField()
    regions = serializers.ListField(child=serializers.CharField())
    windows = PlacementWindowSerializer(
        many=True, help_text="The earliest window of each pool that fits, earliest first."
    )
    alternatives = PlacementWindowSerializer(
        many=True,
        help_text="Only when no window fits: the earliest ones in any region, without the "
        "latest end (one per pool).",
    )

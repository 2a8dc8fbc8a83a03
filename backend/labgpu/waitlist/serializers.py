from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from labgpu.accounts.models import Lab
from labgpu.accounts.selectors import labs_visible_to
from labgpu.api.fields import AwareDateTimeField, OwnPrimaryKeyRelatedField
from labgpu.catalog.models import NodePool
from labgpu.catalog.selectors import pools_visible_to
from labgpu.waitlist.models import WaitlistEntry
from labgpu.waitlist.selectors import entry_position


class WaitlistJoinSerializer(serializers.Serializer):
    pool = OwnPrimaryKeyRelatedField(
        queryset=NodePool.objects.all(),
        visible_to=pools_visible_to,
        required=False,
        allow_null=True,
        help_text="The pool to wait for; or give `gpu_model` to wait for any pool of it.",
    )
    gpu_model = serializers.CharField(
        max_length=64,
        required=False,
        allow_blank=True,
        default="",
        help_text="A GPU model (e.g. MI300X): any pool of it your lab may book.",
    )
    earliest_start = AwareDateTimeField()
    latest_end = AwareDateTimeField()
    duration_minutes = serializers.IntegerField(min_value=1, max_value=90 * 24 * 60)
    auto_book = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Book at once when capacity frees, instead of a held offer to take.",
    )
    purpose = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    lab = OwnPrimaryKeyRelatedField(
        queryset=Lab.objects.all(),
        visible_to=labs_visible_to,
        required=False,
        allow_null=True,
        help_text="Needed when you are in several labs.",
    )


class WaitlistEntrySerializer(serializers.ModelSerializer):
    lab_name = serializers.CharField(source="lab.name", read_only=True)
    pool_name = serializers.CharField(source="pool.name", read_only=True, allow_null=True)
    username = serializers.CharField(source="user.username", read_only=True)
    status = serializers.ChoiceField(choices=WaitlistEntry.Status.choices, read_only=True)
    status_display = serializers.CharField(source="get_status_display", read_only=True)
    position = serializers.SerializerMethodField(
        help_text="Place in line while waiting (1: offered next); null otherwise."
    )
    offer = serializers.SerializerMethodField()

    class Meta:
        model = WaitlistEntry
        fields = [
            "id",
            "lab",
            "lab_name",
            "username",
            "pool",
            "pool_name",
            "gpu_model",
            "earliest_start",
            "latest_end",
            "duration_minutes",
            "auto_book",
            "purpose",
            "status",
            "status_display",
            "position",
            "booking",
            "offer",
            "offered_at",
            "offer_expires_at",
            "created_at",
        ]
        read_only_fields = fields

    def get_position(self, entry: WaitlistEntry) -> int | None:
        return entry_position(entry)

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {
                "pool": {"type": "integer"},
                "pool_name": {"type": "string"},
                "start": {"type": "string", "format": "date-time"},
                "end": {"type": "string", "format": "date-time"},
                "booking_status": {"type": "string"},
            },
            "required": ["pool", "pool_name", "start", "end", "booking_status"],
        }
    )
    def get_offer(self, entry: WaitlistEntry) -> dict | None:
        """The time offered or booked for the entry (its booking's pool and times)."""
        booking = entry.booking
        if booking is None:
            return None
        return {
            "pool": booking.pool_id,
            "pool_name": booking.pool.name,
            "start": serializers.DateTimeField().to_representation(booking.start),
            "end": serializers.DateTimeField().to_representation(booking.end),
            "booking_status": booking.status,
        }

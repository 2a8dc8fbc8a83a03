from rest_framework import serializers

from labgpu.accounts.models import Lab
from labgpu.accounts.selectors import labs_visible_to
from labgpu.accounts.serializers import LabSummarySerializer, UserSummarySerializer
from labgpu.api.fields import AwareDateTimeField, OwnPrimaryKeyRelatedField
from labgpu.api.serializers import CachedFieldsModelSerializer, CachedFieldsSerializer
from labgpu.bookings.models import Booking, Notification


class BookingNodeSerializer(serializers.Serializer):
    """What the user needs to reach their node. The SSH command appears once it is ready."""

    id = serializers.IntegerField()
    attempt = serializers.IntegerField()
    status = serializers.CharField()
    public_ip = serializers.IPAddressField(allow_null=True)
    ssh_user = serializers.SerializerMethodField()
    ssh_command = serializers.SerializerMethodField()
    failure_reason = serializers.CharField()
    status_changed_at = serializers.DateTimeField(allow_null=True)
    # Longer in its status than expected: the page says so, with the provider's last error.
    stuck = serializers.BooleanField(source="is_stuck")
    last_error = serializers.CharField()
    last_error_at = serializers.DateTimeField(allow_null=True)

    def get_ssh_user(self, node) -> str:  # type: ignore[no-untyped-def]
        return node.SSH_USER

    def get_ssh_command(self, node) -> str | None:  # type: ignore[no-untyped-def]
        return node.ssh_command


class BookingSerializer(CachedFieldsModelSerializer):
    lab = LabSummarySerializer(read_only=True)
    user = UserSummarySerializer(read_only=True)
    pool_name = serializers.CharField(source="pool.name", read_only=True)
    instance_type = serializers.IntegerField(source="pool.instance_type_id", read_only=True)
    gpu_hours = serializers.DecimalField(max_digits=12, decimal_places=2, read_only=True)
    estimated_cost = serializers.DecimalField(max_digits=12, decimal_places=2, read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    ended_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    actual_end = serializers.DateTimeField(
        read_only=True, help_text="The planned end, or when the booking was ended early."
    )
    node = BookingNodeSerializer(source="current_node", read_only=True, allow_null=True)

    class Meta:
        model = Booking
        fields = [
            "id",
            "pool",
            "pool_name",
            "instance_type",
            "lab",
            "user",
            "start",
            "end",
            "pending_end",
            "purpose",
            "status",
            "status_changed_at",
            "on_demand",
            "gpu_count",
            "price_per_hour",
            "gpu_hours",
            "estimated_cost",
            "consumed_gpu_hours",
            "decided_by",
            "decided_at",
            "decision_reason",
            "ended_by",
            "ended_at",
            "actual_end",
            "failure_reason",
            "actual_cost",
            "node",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class BookingCreateSerializer(CachedFieldsSerializer):
    # A plain id: the booking service resolves it under the pool lock, together with whether the
    # lab may book it, instead of a separate lookup here.
    pool = serializers.IntegerField(min_value=1, max_value=2**63 - 1, help_text="Pool id")
    start = AwareDateTimeField(
        required=False, allow_null=True, help_text="Omit (or give now) for an on-demand booking."
    )
    end = AwareDateTimeField()
    purpose = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    lab = OwnPrimaryKeyRelatedField(
        queryset=Lab.objects.all(),
        visible_to=labs_visible_to,
        required=False,
        allow_null=True,
        help_text="Needed when you are in several labs.",
    )


class BookingExtendSerializer(CachedFieldsSerializer):
    end = AwareDateTimeField()


class BookingMoveSerializer(serializers.Serializer):
    start = AwareDateTimeField()
    end = AwareDateTimeField()


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")


class BusyBlockSerializer(serializers.Serializer):
    """A live booking as a calendar sees it: other labs' bookings carry no identity (I-6)."""

    # The answer's shape, for the schema; bookings.selectors.busy_blocks builds it as plain dicts
    # (a month of a busy pool is a few hundred rows: a serializer per row cost more than the query).
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    # The reserved period (start − provisioning lead, end + teardown grace) is what the pool
    # really holds: calendars draw it so that the time they show free is free (issue 14 bug 10).
    reserved_start = serializers.DateTimeField()
    reserved_end = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=Booking.Status.choices)
    mine = serializers.BooleanField(read_only=True)
    booking = serializers.IntegerField(read_only=True, allow_null=True)
    lab = serializers.DictField(read_only=True, allow_null=True)


class AvailabilityQuerySerializer(serializers.Serializer):
    start = AwareDateTimeField()
    end = AwareDateTimeField()
    duration_minutes = serializers.IntegerField(min_value=1, max_value=60 * 24 * 90, required=False)

    def validate(self, attrs: dict) -> dict:
        if attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError(
                {
                    "end": [
                        serializers.ErrorDetail(
                            "The end must be after the start.", code="end_before_start"
                        )
                    ]
                }
            )
        if (attrs["end"] - attrs["start"]).days > 92:
            raise serializers.ValidationError(
                {
                    "end": [
                        serializers.ErrorDetail(
                            "Ask for at most 92 days at once.", code="range_too_long"
                        )
                    ]
                }
            )
        return attrs


class IntervalSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    used = serializers.IntegerField()
    free = serializers.IntegerField()
    blackout = serializers.BooleanField()


class WindowSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class AvailabilitySerializer(serializers.Serializer):
    pool = serializers.IntegerField()
    capacity = serializers.IntegerField()
    duration_minutes = serializers.IntegerField()
    intervals = IntervalSerializer(many=True)
    next_free = WindowSerializer(many=True)


class BlackoutClashSerializer(serializers.ModelSerializer):
    """A live booking a blackout overlaps, as the site admin deciding about it sees it."""

    user = serializers.CharField(source="user.username", read_only=True)
    lab = serializers.CharField(source="lab.name", read_only=True)

    class Meta:
        model = Booking
        fields = ["id", "user", "lab", "start", "end", "status"]
        read_only_fields = fields


class BlackoutCreatedSerializer(serializers.Serializer):
    """The new blackout and the live bookings it overlaps (their owners have been emailed)."""

    id = serializers.IntegerField()
    pool = serializers.IntegerField(source="pool_id")
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    reason = serializers.CharField()
    clashes = BlackoutClashSerializer(many=True)


class NotificationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Notification
        fields = ["id", "subject", "body", "booking", "read_at", "created_at"]
        read_only_fields = fields


class NotificationReadSerializer(serializers.Serializer):
    marked = serializers.IntegerField(help_text="How many unread notifications are now read.")


class QuotaImpactSerializer(serializers.Serializer):
    month = serializers.DateField()
    limit_gpu_hours = serializers.DecimalField(max_digits=12, decimal_places=2)
    used_before = serializers.DecimalField(max_digits=12, decimal_places=2)
    used_after = serializers.DecimalField(max_digits=12, decimal_places=2)
    exceeds = serializers.BooleanField()


class DecisionBlackoutSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    reason = serializers.CharField()


class ApprovalQueueItemSerializer(serializers.Serializer):
    """A booking, or an approved booking's extension, waiting for a lab admin; with what the
    decision would change."""

    booking = BookingSerializer()
    is_extension = serializers.BooleanField()
    end_after = serializers.DateTimeField(help_text="The booking's end once approved.")
    quota = QuotaImpactSerializer(many=True)
    blackouts = DecisionBlackoutSerializer(many=True)
    capacity_free = serializers.BooleanField(
        help_text="Whether a node of the pool is still free over the whole period asked."
    )


class BulkDecisionSerializer(serializers.Serializer):
    ids = serializers.ListField(child=serializers.IntegerField(min_value=1), max_length=100)
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    reason = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")


class DecisionOutcomeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    ok = serializers.BooleanField()
    code = serializers.CharField(help_text="Why it was not decided (empty when it was).")
    message = serializers.CharField()
    booking = BookingSerializer(allow_null=True)


class BulkDecisionResultSerializer(serializers.Serializer):
    results = DecisionOutcomeSerializer(many=True)

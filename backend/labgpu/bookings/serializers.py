from rest_framework import serializers

from labgpu.accounts.models import Lab
from labgpu.accounts.selectors import labs_visible_to
from labgpu.accounts.serializers import LabSummarySerializer, UserSummarySerializer
from labgpu.api.fields import AwareDateTimeField, OwnPrimaryKeyRelatedField
from labgpu.bookings.models import Booking


class BookingNodeSerializer(serializers.Serializer):
    """What the user needs to reach their node. The SSH command appears once it is ready."""

    id = serializers.IntegerField()
    attempt = serializers.IntegerField()
    status = serializers.CharField()
    public_ip = serializers.IPAddressField(allow_null=True)
    ssh_user = serializers.SerializerMethodField()
    ssh_command = serializers.SerializerMethodField()
    failure_reason = serializers.CharField()

    def get_ssh_user(self, node) -> str:  # type: ignore[no-untyped-def]
        return node.SSH_USER

    def get_ssh_command(self, node) -> str | None:  # type: ignore[no-untyped-def]
        return node.ssh_command


class BookingSerializer(serializers.ModelSerializer):
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


class BookingCreateSerializer(serializers.Serializer):
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


class BookingExtendSerializer(serializers.Serializer):
    end = AwareDateTimeField()


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")


class BusyBlockSerializer(serializers.ModelSerializer):
    """A live booking as a calendar sees it: other labs' bookings carry no identity (I-6)."""

    mine = serializers.SerializerMethodField()
    booking = serializers.SerializerMethodField()
    lab = serializers.SerializerMethodField()

    class Meta:
        model = Booking
        fields = ["start", "end", "status", "mine", "booking", "lab"]

    def _own_lab(self, booking: Booking) -> bool:
        request = self.context["request"]
        if request.user.is_site_admin:
            return True
        labs = self.context.setdefault(
            "_labs", set(request.user.memberships.values_list("lab_id", flat=True))
        )
        return booking.lab_id in labs

    def get_mine(self, booking: Booking) -> bool:
        return booking.user_id == self.context["request"].user.pk

    def get_booking(self, booking: Booking) -> int | None:
        return booking.pk if self._own_lab(booking) else None

    def get_lab(self, booking: Booking) -> dict | None:
        return LabSummarySerializer(booking.lab).data if self._own_lab(booking) else None

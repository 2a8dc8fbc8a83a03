from rest_framework import serializers

from labgpu.core.reasons import reason_in_language
from labgpu.provisioning.models import Node, UntrackedVolume, Volume
from labgpu.provisioning.services.volume_changes import volume_limit_gb


class ReasonField(serializers.CharField):
    """A stored reason in the reader's language (labgpu.core.reasons)."""

    def to_representation(self, value: str) -> str:
        return reason_in_language(super().to_representation(value))


class NodeSerializer(serializers.ModelSerializer):
    booking_user = serializers.CharField(source="booking.user.username", read_only=True)
    lab = serializers.CharField(source="booking.lab.name", read_only=True)
    pool = serializers.CharField(source="booking.pool.name", read_only=True)
    name = serializers.CharField(read_only=True)
    verdict = serializers.SerializerMethodField()
    stuck = serializers.BooleanField(source="is_stuck", read_only=True)
    failure_reason = ReasonField(allow_blank=True, required=False)
    expected_in_state_s = serializers.SerializerMethodField()

    class Meta:
        model = Node
        fields = [
            "id",
            "name",
            "booking",
            "booking_user",
            "lab",
            "pool",
            "attempt",
            "provider_id",
            "region",
            "size",
            "status",
            "status_changed_at",
            "public_ip",
            "last_heartbeat_at",
            "provider_created_at",
            "active_at",
            "ready_at",
            "destroyed_at",
            "failed_at",
            "failure_reason",
            "last_error",
            "last_error_at",
            "stuck",
            "expected_in_state_s",
            "verdict",
        ]

    def get_verdict(self, node: Node) -> str | None:
        reports = list(node.health_reports.all())  # prefetched by the view
        return max(reports, key=lambda r: r.created_at).verdict if reports else None

    def get_expected_in_state_s(self, node: Node) -> int | None:
        return node.expected_in_state_s()


class VolumeSerializer(serializers.ModelSerializer):
    owner_username = serializers.CharField(source="owner_user.username", default=None)
    owner_lab_name = serializers.CharField(source="owner_lab.name", default=None)
    used_gb = serializers.DecimalField(
        max_digits=10,
        decimal_places=2,
        allow_null=True,
        help_text="GB in use on /data as the node's agent last reported it (≤ size_gb); null "
        "until known.",
    )
    used_at = serializers.DateTimeField(
        allow_null=True, help_text="When the agent reported used_gb; null until known."
    )
    cost = serializers.DecimalField(
        max_digits=14, decimal_places=2, help_text="Storage cost metered so far (USD)."
    )
    in_use = serializers.SerializerMethodField(help_text="A booking uses it: it cannot be deleted.")
    attached_booking = serializers.IntegerField(
        source="attached_node.booking_id",
        default=None,
        allow_null=True,
        help_text="The booking whose node it is attached to; null while detached.",
    )

    resize_to_gb = serializers.IntegerField(
        allow_null=True,
        read_only=True,
        help_text="The size a grow asked for, until the provider accepted it; null otherwise.",
    )
    limit_gb = serializers.SerializerMethodField(
        help_text="The largest size it may grow to (its pool's limit, else the site's)."
    )
    last_error = serializers.CharField(
        read_only=True, help_text="The provider's refusal of the last grow; blank if none."
    )

    class Meta:
        model = Volume
        fields = [
            "id",
            "name",
            "region",
            "pool",
            "size_gb",
            "resize_to_gb",
            "limit_gb",
            "last_error",
            "used_gb",
            "used_at",
            "state",
            "owner_username",
            "owner_lab_name",
            "in_use",
            "attached_booking",
            "cost",
            "created_at",
        ]
        read_only_fields = fields

    def get_in_use(self, volume: Volume) -> bool:
        return volume.pk in self.context.get("busy", set())

    def get_limit_gb(self, volume: Volume) -> int:
        return volume_limit_gb(volume)


class VolumeCreateSerializer(serializers.Serializer):
    pool = serializers.IntegerField(help_text="A pool that offers volumes (volume_scope ≠ none).")
    size_gb = serializers.IntegerField(min_value=1, help_text="≤ the pool's max_volume_gb.")
    region = serializers.CharField(
        required=False,
        max_length=32,
        help_text="One of the pool's regions (its region or a fallback); default its region.",
    )
    lab = serializers.IntegerField(
        required=False, help_text="The owning lab, for pools whose volumes belong to labs."
    )


class VolumeResizeSerializer(serializers.Serializer):
    size_gb = serializers.IntegerField(
        min_value=1, help_text="The new size: more than today's, ≤ limit_gb (volumes only grow)."
    )


class LabVolumeSizeSerializer(serializers.Serializer):
    size_gb = serializers.IntegerField(
        min_value=1, help_text="Size of the lab's new volumes (≤ limit_gb)."
    )
    limit_gb = serializers.IntegerField(read_only=True, help_text="The site admin's limit.")
    default_gb = serializers.IntegerField(read_only=True)


class UntrackedVolumeSerializer(serializers.ModelSerializer):
    class Meta:
        model = UntrackedVolume
        fields = ["id", "provider_id", "name", "region", "size_gb", "created_at", "last_seen_at"]
        read_only_fields = fields


class PoolReadyTimeSerializer(serializers.Serializer):
    """How long a pool's nodes took from creation to handover (its latest ready nodes)."""

    pool = serializers.IntegerField()
    median_seconds = serializers.IntegerField()
    max_seconds = serializers.IntegerField()
    samples = serializers.IntegerField()

from django.utils.translation import gettext as _
from rest_framework import serializers

from labgpu.api.fields import AwareDateTimeField
from labgpu.catalog.models import Blackout, InstanceType, NodePool, ProviderAccount
from labgpu.health.selectors import instance_type_baselines


class ProviderAccountSerializer(serializers.ModelSerializer):
    token_configured = serializers.BooleanField(read_only=True)

    class Meta:
        model = ProviderAccount
        fields = [
            "id",
            "name",
            "kind",
            "api_base_url",
            "token_env_var",
            "token_configured",
            "is_active",
        ]


class InstanceTypeSerializer(serializers.ModelSerializer):
    baselines = serializers.SerializerMethodField(
        help_text="Per smoke metric (`name:metric`): the lab-weighted median over the latest "
        "passing report of each of the last 50 nodes; out-of-range values are ignored."
    )

    class Meta:
        model = InstanceType
        fields = [
            "id",
            "name",
            "slug",
            "provider_account",
            "provider_size",
            "image",
            "gpu_vendor",
            "gpu_model",
            "gpu_count",
            "vram_gb_per_gpu",
            "gpu_arch",
            "price_per_hour",
            "agent_profile",
            "expected_baselines",
            "baselines",
            "is_active",
        ]

    def get_baselines(self, instance_type: InstanceType) -> dict[str, dict]:
        return instance_type_baselines(instance_type)


class NodePoolSerializer(serializers.ModelSerializer):
    instance_type_detail = InstanceTypeSerializer(source="instance_type", read_only=True)

    class Meta:
        model = NodePool
        fields = [
            "id",
            "name",
            "slug",
            "instance_type",
            "instance_type_detail",
            "region",
            "fallback_regions",
            "capacity",
            "granularity_minutes",
            "min_duration_minutes",
            "max_duration_minutes",
            "max_days_ahead",
            "provisioning_lead_minutes",
            "teardown_grace_minutes",
            "requires_approval",
            "waitlist_hold_minutes",
            "idle_reclaim_minutes",
            "idle_grace_minutes",
            "volume_scope",
            "max_volume_gb",
            "allowed_labs",
            "is_active",
        ]

    def validate(self, attrs: dict) -> dict:
        minimum = attrs.get(
            "min_duration_minutes", getattr(self.instance, "min_duration_minutes", 0)
        )
        maximum = attrs.get(
            "max_duration_minutes", getattr(self.instance, "max_duration_minutes", minimum)
        )
        if maximum < minimum:
            raise serializers.ValidationError(
                {"max_duration_minutes": [_("Must be at least min_duration_minutes.")]}
            )
        if attrs.get("granularity_minutes", 1) < 1:
            raise serializers.ValidationError({"granularity_minutes": [_("Must be at least 1.")]})
        return attrs


class BlackoutSerializer(serializers.ModelSerializer):
    start = AwareDateTimeField()
    end = AwareDateTimeField()

    class Meta:
        model = Blackout
        fields = ["id", "pool", "start", "end", "reason"]

    def validate(self, attrs: dict) -> dict:
        start = attrs.get("start", getattr(self.instance, "start", None))
        end = attrs.get("end", getattr(self.instance, "end", None))
        if start and end and end <= start:
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

from decimal import Decimal

from rest_framework import serializers

from labgpu.accounts.models import Lab
from labgpu.accounts.serializers import LabSummarySerializer
from labgpu.catalog.models import InstanceType
from labgpu.quotas.models import Quota, QuotaRequest


class QuotaSerializer(serializers.ModelSerializer):
    lab = LabSummarySerializer(read_only=True)
    instance_type_name = serializers.CharField(source="instance_type.name", read_only=True)
    used_gpu_hours = serializers.DecimalField(max_digits=12, decimal_places=2, read_only=True)
    committed_gpu_hours = serializers.DecimalField(max_digits=12, decimal_places=2, read_only=True)
    remaining_gpu_hours = serializers.DecimalField(max_digits=12, decimal_places=2, read_only=True)

    class Meta:
        model = Quota
        fields = [
            "id",
            "lab",
            "instance_type",
            "instance_type_name",
            "month",
            "gpu_hours",
            "used_gpu_hours",
            "committed_gpu_hours",
            "remaining_gpu_hours",
        ]


class QuotaWriteSerializer(serializers.Serializer):
    lab = serializers.PrimaryKeyRelatedField(queryset=Lab.objects.all())
    instance_type = serializers.PrimaryKeyRelatedField(queryset=InstanceType.objects.all())
    month = serializers.DateField()
    gpu_hours = serializers.DecimalField(max_digits=12, decimal_places=2, min_value=0)


class QuotaRequestSerializer(serializers.ModelSerializer):
    lab_detail = LabSummarySerializer(source="lab", read_only=True)
    instance_type_name = serializers.CharField(source="instance_type.name", read_only=True)
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = QuotaRequest
        fields = [
            "id",
            "lab",
            "lab_detail",
            "instance_type",
            "instance_type_name",
            "month",
            "gpu_hours",
            "reason",
            "status",
            "requested_by",
            "decided_by",
            "decided_at",
            "decision_reason",
            "created_at",
        ]
        read_only_fields = [
            "id",
            "status",
            "requested_by",
            "decided_by",
            "decided_at",
            "decision_reason",
            "created_at",
        ]
        extra_kwargs = {
            "gpu_hours": {"min_value": Decimal("0.01"), "max_value": Decimal(10_000_000)}
        }


class DecisionSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")

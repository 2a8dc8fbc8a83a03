from decimal import Decimal

from django.db.models import QuerySet
from rest_framework import serializers

from labgpu.accounts.models import Lab
from labgpu.accounts.selectors import labs_visible_to
from labgpu.accounts.serializers import LabSummarySerializer
from labgpu.api.fields import AcceptedDateField, OwnPrimaryKeyRelatedField
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


def _every_instance_type(user: object) -> QuerySet[InstanceType]:
    return InstanceType.objects.all()


class QuotaWriteSerializer(serializers.Serializer):
    lab = OwnPrimaryKeyRelatedField(queryset=Lab.objects.all(), visible_to=labs_visible_to)
    instance_type = OwnPrimaryKeyRelatedField(
        queryset=InstanceType.objects.all(), visible_to=_every_instance_type
    )
    month = AcceptedDateField()
    gpu_hours = serializers.DecimalField(max_digits=12, decimal_places=2, min_value=0)


class QuotaRequestSerializer(serializers.ModelSerializer):
    # Another lab's id reads as an unknown one (issue 11 item 12).
    lab = OwnPrimaryKeyRelatedField(queryset=Lab.objects.all(), visible_to=labs_visible_to)
    instance_type = OwnPrimaryKeyRelatedField(
        queryset=InstanceType.objects.all(), visible_to=_every_instance_type
    )
    month = AcceptedDateField()
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

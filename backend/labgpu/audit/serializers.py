from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from labgpu.audit.models import AuditEvent
from labgpu.core.reasons import reason_in_language


class AuditEventSerializer(serializers.ModelSerializer):
    actor = serializers.SlugRelatedField(slug_field="username", read_only=True)
    reason = serializers.SerializerMethodField()

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "created_at",
            "actor",
            "action",
            "target_type",
            "target_id",
            "lab",
            "data",
            "reason",
        ]

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_reason(self, event: AuditEvent) -> str | None:
        """`data.reason` as the reader reads it: a worker's stored reason (a failed gate, an idle
        end, a site admin's destroy) in their language, a person's own words as they wrote them."""
        stored = event.data.get("reason") if isinstance(event.data, dict) else None
        return reason_in_language(stored) if isinstance(stored, str) and stored else None

from rest_framework import serializers

from labgpu.audit.models import AuditEvent


class AuditEventSerializer(serializers.ModelSerializer):
    actor = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = AuditEvent
        fields = ["id", "created_at", "actor", "action", "target_type", "target_id", "lab", "data"]

from rest_framework import serializers

from labgpu.health.models import HealthReport


class HealthReportSerializer(serializers.ModelSerializer):
    class Meta:
        model = HealthReport
        fields = [
            "id",
            "node",
            "instance_type",
            "verdict",
            "profile",
            "agent_version",
            "collected_at",
            "findings",
            "smoke",
            "facts",
            "created_at",
        ]


class AgentReportSerializer(serializers.Serializer):
    """The agent's report; its full schema is labgpu_agent's report.schema.json."""

    schema_version = serializers.IntegerField()
    verdict = serializers.ChoiceField(choices=HealthReport.Verdict.choices)


class AgentBootstrapSerializer(serializers.Serializer):
    node = serializers.IntegerField()
    heartbeat_token = serializers.CharField()
    profile = serializers.CharField()
    heartbeat_interval_s = serializers.IntegerField()
    required_smoke = serializers.ListField(child=serializers.CharField())


class AgentHeartbeatSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=["continue", "stop"])


class BaselineSerializer(serializers.Serializer):
    metric = serializers.CharField()
    unit = serializers.CharField()
    median = serializers.FloatField()
    samples = serializers.IntegerField()


class InstanceTypeHealthSerializer(serializers.Serializer):
    instance_type = serializers.IntegerField()
    baselines = serializers.DictField(child=BaselineSerializer())
    reports = HealthReportSerializer(many=True)

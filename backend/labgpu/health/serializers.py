import math
from typing import Any

from rest_framework import serializers

from labgpu.health.models import HealthReport


def finite_json(value: Any) -> Any:
    """`value` with non-finite numbers as null: a row stored before reports were bounded
    must still render as JSON. Iterative, so no stored depth can recurse."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        container, key = stack.pop()
        item = container[key]
        if isinstance(item, float) and not math.isfinite(item):
            container[key] = None
        elif isinstance(item, dict):
            copy = dict(item)
            container[key] = copy
            stack.extend((copy, k) for k in copy)
        elif isinstance(item, list):
            copy = list(item)
            container[key] = copy
            stack.extend((copy, i) for i in range(len(copy)))
    return root[0]


class ReportJSONField(serializers.JSONField):
    def to_representation(self, value: Any) -> Any:
        return finite_json(value)


class HealthReportSerializer(serializers.ModelSerializer):
    findings = ReportJSONField(read_only=True)
    smoke = ReportJSONField(read_only=True)
    facts = ReportJSONField(read_only=True)

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
            "deep",
            "required_smoke",
            "timing",
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
    action = serializers.ChoiceField(choices=["continue", "stop", "deep_check"])


class DeepCheckRequestSerializer(serializers.Serializer):
    node = serializers.IntegerField()
    status = serializers.CharField()
    deep_check_requested_at = serializers.DateTimeField()


class BaselineSerializer(serializers.Serializer):
    metric = serializers.CharField()
    unit = serializers.CharField()
    median = serializers.FloatField()
    samples = serializers.IntegerField()


class InstanceTypeHealthSerializer(serializers.Serializer):
    instance_type = serializers.IntegerField()
    baselines = serializers.DictField(child=BaselineSerializer())
    reports = HealthReportSerializer(many=True)

import math
from typing import Any

from rest_framework import serializers

from labgpu.health.finding_texts import localized_findings
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


class FindingsField(ReportJSONField):
    """Findings in the reader's language (labgpu.health.finding_texts)."""

    def to_representation(self, value: Any) -> Any:
        return localized_findings(super().to_representation(value))


class HealthReportSerializer(serializers.ModelSerializer):
    findings = FindingsField(read_only=True)
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


class AgentNotebookSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="JupyterLab's secret token; the agent writes it 0600.")
    port = serializers.IntegerField(help_text="JupyterLab's port on 127.0.0.1.")


class AgentBootstrapSerializer(serializers.Serializer):
    node = serializers.IntegerField()
    heartbeat_token = serializers.CharField()
    profile = serializers.CharField()
    heartbeat_interval_s = serializers.FloatField(
        help_text="Seconds between heartbeats (LABGPU_HEARTBEAT_INTERVAL_S; 30 in production)."
    )
    required_smoke = serializers.ListField(child=serializers.CharField())
    notebook = AgentNotebookSerializer(
        required=False, help_text="Only when the booking asked for JupyterLab."
    )


class AgentNotebookStateSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=["starting", "running", "failed"])


class HeartbeatGpuSerializer(serializers.Serializer):
    index = serializers.IntegerField(min_value=0, max_value=1023)
    utilisation_pct = serializers.FloatField(min_value=0, max_value=100, required=False)
    vram_used_mib = serializers.FloatField(min_value=0, required=False)
    vram_total_mib = serializers.FloatField(min_value=0, required=False)
    power_w = serializers.FloatField(min_value=0, max_value=10_000, required=False)


class HeartbeatDataSerializer(serializers.Serializer):
    used_bytes = serializers.IntegerField(min_value=0, max_value=64 * 2**40)
    total_bytes = serializers.IntegerField(
        min_value=1, max_value=64 * 2**40, help_text="used_bytes ≤ total_bytes."
    )


class HeartbeatUsageSerializer(serializers.Serializer):
    gpus = HeartbeatGpuSerializer(many=True, max_length=64)
    gpu_processes = serializers.IntegerField(min_value=0, required=False)
    ssh_sessions = serializers.IntegerField(min_value=0, required=False)
    data = HeartbeatDataSerializer(
        required=False, help_text="/data's bytes (statvfs), only when a volume is mounted there."
    )


class AgentHeartbeatRequestSerializer(serializers.Serializer):
    """Documents the body; `labgpu.health.limits.check_heartbeat` is what enforces it."""

    status = serializers.CharField(max_length=32, required=False)
    usage = HeartbeatUsageSerializer(required=False)


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


class UtilisationSampleSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    utilisation_pct = serializers.FloatField(allow_null=True)
    vram_used_mib = serializers.FloatField(allow_null=True)
    power_w = serializers.FloatField(allow_null=True)
    gpu_processes = serializers.IntegerField(allow_null=True)
    ssh_sessions = serializers.IntegerField(allow_null=True)
    active = serializers.BooleanField()
    gpus = serializers.ListField(child=serializers.DictField())


class IdlePolicySerializer(serializers.Serializer):
    idle_minutes = serializers.IntegerField()
    grace_minutes = serializers.IntegerField()


class BookingUtilisationSerializer(serializers.Serializer):
    booking = serializers.IntegerField()
    average_utilisation_pct = serializers.FloatField(allow_null=True)
    used_hours = serializers.FloatField()
    observed_hours = serializers.FloatField()
    last_sample_at = serializers.DateTimeField(allow_null=True)
    last_active_at = serializers.DateTimeField(allow_null=True)
    idle_warned_at = serializers.DateTimeField(allow_null=True)
    # When an idle booking ends unless used or kept (warning + the pool's grace).
    idle_ends_at = serializers.DateTimeField(allow_null=True)
    idle_policy = IdlePolicySerializer(allow_null=True)
    samples = UtilisationSampleSerializer(many=True)

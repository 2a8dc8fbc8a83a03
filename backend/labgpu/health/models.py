from django.db import models

from labgpu.core.models import BaseModel


class HealthReport(BaseModel):
    """What the node agent found: facts, findings with remediation, smoke results and a verdict.

    The payload is validated by `labgpu_agent.validate_report`, the schema both ends share.
    """

    class Verdict(models.TextChoices):
        PASS = "pass", "pass"
        WARN = "warn", "warn"
        FAIL = "fail", "fail"

    PASSING = (Verdict.PASS, Verdict.WARN)

    node = models.ForeignKey(
        "provisioning.Node", on_delete=models.CASCADE, related_name="health_reports"
    )
    instance_type = models.ForeignKey(
        "catalog.InstanceType", on_delete=models.CASCADE, related_name="health_reports"
    )
    verdict = models.CharField(max_length=8, choices=Verdict.choices, db_index=True)
    profile = models.CharField(max_length=64, blank=True)
    agent_version = models.CharField(max_length=32, blank=True)
    collected_at = models.DateTimeField()
    findings = models.JSONField(default=list)
    smoke = models.JSONField(default=list)
    facts = models.JSONField(default=dict)
    deep = models.BooleanField(default=False)  # a `check --deep` report (vendor stress tools)
    # The smoke tests the pool required and the gate's wall time (`gate_wall_s`, seconds), as
    # the agent reported them.
    required_smoke = models.JSONField(default=list)
    timing = models.JSONField(default=dict)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["instance_type", "verdict", "created_at"])]

    def __str__(self) -> str:
        return f"{self.node} {self.verdict} at {self.collected_at:%Y-%m-%d %H:%M}"

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


class UtilisationSample(models.Model):
    """One heartbeat's utilisation of a node, for the booking's live charts.

    Bounded: at most one per `SAMPLE_MIN_INTERVAL_S` per node (an agent that heartbeats faster is
    not sampled faster) and none older than `SAMPLE_RETENTION_S` (pruned as new ones arrive).
    """

    node = models.ForeignKey(
        "provisioning.Node", on_delete=models.CASCADE, related_name="utilisation_samples"
    )
    booking = models.ForeignKey(
        "bookings.Booking", on_delete=models.CASCADE, related_name="utilisation_samples"
    )
    at = models.DateTimeField()
    # [{"index", "utilisation_pct", "vram_used_mib", "vram_total_mib", "power_w"}], validated
    gpus = models.JSONField(default=list)
    utilisation_pct = models.FloatField(null=True)  # mean over the GPUs that reported one
    vram_used_mib = models.FloatField(null=True)  # sum
    power_w = models.FloatField(null=True)  # sum
    gpu_processes = models.PositiveIntegerField(null=True)
    ssh_sessions = models.PositiveIntegerField(null=True)
    active = models.BooleanField()

    class Meta:
        ordering = ["at"]
        indexes = [
            models.Index(fields=["node", "at"]),
            models.Index(fields=["booking", "at"]),
        ]

    def __str__(self) -> str:
        return f"{self.node} {self.utilisation_pct}% at {self.at:%H:%M:%S}"

from datetime import timedelta

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from labgpu.core.models import BaseModel
from labgpu.core.timeutils import now


class NotebookState(models.TextChoices):
    STARTING = "starting", _("Starting")
    RUNNING = "running", _("Running")
    FAILED = "failed", _("Failed")


class Node(BaseModel):
    """One droplet made for one attempt at serving a booking.

    Invariant I-4: the droplet's name and tag are `labgpu-node-<id>`, so a retried create finds and
    adopts the droplet it already made. Invariant I-3: every droplet with our tag maps to a live
    Node, and reconciliation destroys the rest. `failed` always leads to destroy; `failed_at` and
    `failure_reason` stay set so users and billing can tell a failed node from a finished one.
    """

    class Status(models.TextChoices):
        REQUESTED = "requested", _("Requested")
        CREATING = "creating", _("Creating")
        BOOTING = "booting", _("Booting")
        CHECKING = "checking", _("Checking")
        READY = "ready", _("Ready")
        DRAINING = "draining", _("Draining")
        DESTROYING = "destroying", _("Destroying")
        DESTROYED = "destroyed", _("Destroyed")
        FAILED = "failed", _("Failed")

    LIVE_STATUSES = (
        Status.REQUESTED,
        Status.CREATING,
        Status.BOOTING,
        Status.CHECKING,
        Status.READY,
        Status.DRAINING,
        Status.DESTROYING,
        Status.FAILED,
    )
    # Statuses a node may be torn down from (everything but the end states of teardown itself).
    TEARDOWN_FROM = (
        Status.REQUESTED,
        Status.CREATING,
        Status.BOOTING,
        Status.CHECKING,
        Status.READY,
        Status.DRAINING,
        Status.FAILED,
    )

    booking = models.ForeignKey("bookings.Booking", on_delete=models.PROTECT, related_name="nodes")
    attempt = models.PositiveSmallIntegerField(default=1, validators=[MaxValueValidator(10)])
    provider_account = models.ForeignKey(
        "catalog.ProviderAccount", on_delete=models.PROTECT, related_name="nodes"
    )
    provider_id = models.CharField(max_length=64, blank=True, db_index=True)
    region = models.CharField(max_length=32)
    size = models.CharField(max_length=100)
    image = models.CharField(max_length=100)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.REQUESTED, db_index=True
    )
    status_changed_at = models.DateTimeField(null=True, blank=True)
    public_ip = models.GenericIPAddressField(null=True, blank=True)

    bootstrap_token_hash = models.CharField(max_length=64, blank=True, db_index=True)
    bootstrap_used_at = models.DateTimeField(null=True, blank=True)
    heartbeat_token_hash = models.CharField(max_length=64, blank=True, db_index=True)
    # The bootstrap answer's heartbeat token, sealed (core.sealed), kept only until the node's
    # first report: a bootstrap whose answer was lost is answered again with the same token
    # (health.services.agent_bootstrap); the first report clears it and closes the bootstrap.
    heartbeat_token_sealed = models.TextField(blank=True)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    # A site admin asked for the vendor stress tools (`labgpu-agent check --deep`); the next
    # heartbeat hands the request to the agent and clears it.
    deep_check_requested_at = models.DateTimeField(null=True, blank=True)
    # JupyterLab on this node, as its agent last reported it ("" when the booking asked for none
    # or the agent has not started it yet).
    notebook_state = models.CharField(max_length=8, choices=NotebookState.choices, blank=True)

    provider_created_at = models.DateTimeField(null=True, blank=True)
    active_at = models.DateTimeField(null=True, blank=True)
    # When the agent's report passed; the node is ready once its IP is known too (I-5).
    passed_at = models.DateTimeField(null=True, blank=True)
    ready_at = models.DateTimeField(null=True, blank=True)
    destroy_requested_at = models.DateTimeField(null=True, blank=True)
    destroyed_at = models.DateTimeField(null=True, blank=True)
    # Billing ends where the provider's does (I-8): when it accepted our DELETE, recorded at the
    # call. `delete_sent_at` is when the first DELETE went out, for a retry that finds the droplet
    # already gone because a worker died between the provider's answer and our record of it.
    delete_sent_at = models.DateTimeField(null=True, blank=True)
    delete_accepted_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    failure_reason = models.TextField(blank=True)
    teardown_attempts = models.PositiveIntegerField(default=0)
    # The provider's latest complaint about this node while a task retries (unreachable, rate
    # limited, 5xx): shown to the booking's owner and site admins when the node is stuck.
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    # A short lease for the one worker talking to the provider about this node, so that a
    # redelivered task and a re-driven one cannot both create a droplet (I-4). It expires, so a
    # worker killed while holding it only delays the next attempt.
    lease_token = models.CharField(max_length=32, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    # By when the node's queued provision or teardown step (a fresh task, or a retry's countdown)
    # should have taken the lease. Past it with the lease free, the step died with its worker and
    # the orphan sweep runs it again (reconciliation.nodes_redrive_orphaned).
    step_due_by = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["booking", "attempt"], name="node_unique_attempt"),
            # Nothing is handed over that is not usable: a ready node has its droplet, its address
            # and a passing report, whatever code path (or crash) moved it (I-5, I-8).
            models.CheckConstraint(
                condition=~models.Q(status="ready")
                | (
                    ~models.Q(provider_id="")
                    & models.Q(public_ip__isnull=False)
                    & models.Q(passed_at__isnull=False)
                ),
                name="node_ready_is_usable",
            ),
        ]

    def __str__(self) -> str:
        return f"labgpu-node-{self.pk} ({self.status})"

    @property
    def name(self) -> str:
        return f"labgpu-node-{self.pk}"

    def expected_in_state_s(self) -> int | None:
        """How long a node normally stays in its status; None where it may stay (ready, gone)."""
        if self.status == self.Status.BOOTING:
            return settings.LABGPU_BOOT_TIMEOUT_S
        if self.status == self.Status.CHECKING:
            return settings.LABGPU_AGENT_REPORT_TIMEOUT_S
        if self.status in (self.Status.READY, self.Status.DESTROYED):
            return None
        return settings.LABGPU_STUCK_AFTER_S  # requested, creating, draining, destroying, failed

    @property
    def is_stuck(self) -> bool:
        """In its status for longer than expected (a provider that does not answer, a lost task)."""
        expected = self.expected_in_state_s()
        since = self.status_changed_at or self.created_at
        return (
            expected is not None
            and since is not None
            and now() - since > timedelta(seconds=expected)
        )

    SSH_USER = "root"  # the GPU Droplet images' default user, where cloud-init puts the keys

    @property
    def ssh_command(self) -> str | None:
        """What the user runs to reach the node; only once it passed its checks."""
        if self.status != self.Status.READY or not self.public_ip:
            return None
        return f"ssh {self.SSH_USER}@{self.public_ip}"


class Volume(BaseModel):
    """A block-storage volume that carries one owner's `/data` from node to node in a region.

    The owner is a user, or a lab when the pool's `volume_scope` is "lab". Its provider name is
    deterministic (`providers.volume_name`), so finding-or-creating it is idempotent. Invariants:
    it is attached to at most one node (one `attached_node`, and no node has two: the unique
    constraint), `attached` exactly when `attached_node` is set, and it is never deleted while a
    booking uses it (services.volumes.volume_delete checks under a row lock).
    """

    class State(models.TextChoices):
        CREATING = "creating", _("Creating")
        AVAILABLE = "available", _("Available")
        ATTACHED = "attached", _("Attached")
        DETACHING = "detaching", _("Detaching")
        DELETING = "deleting", _("Deleting")
        DELETED = "deleted", _("Deleted")

    owner_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="volumes",
    )
    owner_lab = models.ForeignKey(
        "accounts.Lab", on_delete=models.PROTECT, null=True, blank=True, related_name="volumes"
    )
    provider_account = models.ForeignKey(
        "catalog.ProviderAccount", on_delete=models.PROTECT, related_name="volumes"
    )
    region = models.CharField(max_length=32)
    name = models.CharField(max_length=64)
    size_gb = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    provider_id = models.CharField(max_length=64, blank=True, db_index=True)
    state = models.CharField(
        max_length=16, choices=State.choices, default=State.CREATING, db_index=True
    )
    attached_node = models.ForeignKey(
        Node, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    last_attached_node = models.ForeignKey(
        Node, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    #: GB in use on the filesystem as the node's agent last reported it; None until known
    used_gb = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    #: when the agent last reported `used_gb` (untrusted: bounded, never above `size_gb`; I-9)
    used_at = models.DateTimeField(null=True, blank=True)
    #: set when used space crossed LABGPU_VOLUME_NEAR_FULL_PCT and the owner was told; cleared
    #: once it falls back below (re-armed), so each crossing notifies once
    near_full_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    #: the pool it was made for (its size limit applies when it grows); null for volumes made
    #: before pools were recorded, which grow within the site's limit
    pool = models.ForeignKey(
        "catalog.NodePool", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    #: a grow asked for and not yet accepted by the provider: the meter stops at
    #: `resize_requested_at` until the provider's acceptance time is known (services.volumes)
    resize_to_gb = models.PositiveIntegerField(null=True, blank=True)
    resize_requested_at = models.DateTimeField(null=True, blank=True)
    #: the provider's refusal of the last create or grow, as it said it (shown to the owner)
    last_error = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["region", "name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(owner_user__isnull=False, owner_lab__isnull=True)
                | models.Q(owner_user__isnull=True, owner_lab__isnull=False),
                name="volume_one_owner",
            ),
            # one live volume per name and region on an account (DigitalOcean's own rule)
            models.UniqueConstraint(
                fields=["provider_account", "region", "name"],
                condition=~models.Q(state="deleted"),
                name="volume_unique_live_name",
            ),
            # one row per provider volume: two rows on one disk would meter it twice and let one
            # row delete what the other still uses. A row not yet created at the provider has no
            # id (blank), and blanks are not duplicates.
            models.UniqueConstraint(
                fields=["provider_account", "provider_id"],
                condition=~models.Q(provider_id=""),
                name="volume_unique_provider_id",
            ),
            # a node has at most one of our volumes, and a volume one node (the single FK)
            models.UniqueConstraint(
                fields=["attached_node"],
                condition=models.Q(attached_node__isnull=False),
                name="volume_one_per_node",
            ),
            models.CheckConstraint(
                condition=~models.Q(state="attached") | models.Q(attached_node__isnull=False),
                name="volume_attached_has_node",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.state})"


class LabVolumeSize(BaseModel):
    """A lab admin's size for new volumes of the lab and its members (≤ the site's limit)."""

    lab = models.OneToOneField("accounts.Lab", on_delete=models.CASCADE, related_name="+")
    size_gb = models.PositiveIntegerField(validators=[MinValueValidator(1)])


class UntrackedVolume(BaseModel):
    """A volume with our tag at the provider that no `Volume` row tracks, reported to site
    admins by reconciliation (never deleted automatically: it may hold someone's data)."""

    provider_account = models.ForeignKey(
        "catalog.ProviderAccount", on_delete=models.CASCADE, related_name="+"
    )
    provider_id = models.CharField(max_length=64)
    name = models.CharField(max_length=64)
    region = models.CharField(max_length=32)
    size_gb = models.PositiveIntegerField()
    last_seen_at = models.DateTimeField()
    #: set when a listing no longer shows it (deleted at the provider, or adopted)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["region", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider_account", "provider_id"], name="untracked_volume_unique"
            )
        ]

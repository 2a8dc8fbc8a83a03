import os
import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from labgpu.core.models import BaseModel
from labgpu.providers.credentials import (
    ALLOWED_BASE_URLS_SETTING,
    DIGITALOCEAN_API_URL,
    TOKEN_ENV_PREFIX,
    base_url_problem,
    token_env_var_allowed,
)

ENV_VAR_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# Explicit bounds: they are real limits, and they keep the OpenAPI schema the same on every
# database (Django otherwise derives integer bounds from the backend's column types).
MAX_CAPACITY = 1000
DAY_MINUTES = 24 * 60
YEAR_MINUTES = 366 * DAY_MINUTES
#: "The maximum size for a volume is 16TiB." (DigitalOcean, Block Storage)
MAX_VOLUME_GB = 16 * 1024


def validate_env_var_name(value: str) -> None:  # referenced by migration 0001 only
    if not ENV_VAR_NAME.match(value):
        raise ValidationError(_("Name an environment variable."))


def validate_token_env_var(value: str) -> None:
    """Only `LABGPU_PROVIDER_TOKEN_*` variables may hold a provider token (docs/security.md)."""
    if not token_env_var_allowed(value):
        raise ValidationError(
            _(
                "Name an environment variable starting with %(prefix)s, "
                "e.g. %(prefix)sDIGITALOCEAN; other variables are never read."
            ),
            code="token_env_var_not_allowed",
            params={"prefix": TOKEN_ENV_PREFIX},
        )


def validate_provider_base_url(value: str) -> None:
    """DigitalOcean's API, or an origin listed in LABGPU_PROVIDER_ALLOWED_BASE_URLS."""
    if base_url_problem(value) is not None:
        raise ValidationError(
            _(
                "Only %(default)s is allowed unless %(setting)s lists this origin "
                "(scheme, host and port; no path)."
            ),
            code="base_url_not_allowed",
            params={"default": DIGITALOCEAN_API_URL, "setting": ALLOWED_BASE_URLS_SETTING},
        )


class ProviderAccount(BaseModel):
    """A cloud account. The credential is a *reference* to an environment variable."""

    class Kind(models.TextChoices):
        DIGITALOCEAN = "digitalocean", "DigitalOcean"
        EMULATOR = "emulator", _("Emulator")

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    # A CharField: Django's URL validator refuses compose's `http://emulator:8010` (no dot), and
    # validate_provider_base_url is stricter anyway (an allowed origin, nothing else).
    api_base_url = models.CharField(
        max_length=200, default=DIGITALOCEAN_API_URL, validators=[validate_provider_base_url]
    )
    token_env_var = models.CharField(
        max_length=100,
        validators=[validate_token_env_var],
        help_text=_("Environment variable holding the token: LABGPU_PROVIDER_TOKEN_<NAME>."),
    )
    is_active = models.BooleanField(default=True)

    def __str__(self) -> str:
        return self.name

    @property
    def token_configured(self) -> bool:
        """Whether the token's variable is set; never looked up for a name outside the prefix."""
        return token_env_var_allowed(self.token_env_var) and bool(
            os.environ.get(self.token_env_var)
        )

    @property
    def usable(self) -> bool:
        """Its token is configured and may be sent to its base URL (the driver checks again)."""
        return self.token_configured and base_url_problem(self.api_base_url) is None


class InstanceType(BaseModel):
    class Vendor(models.TextChoices):
        AMD = "amd", "AMD"
        NVIDIA = "nvidia", "NVIDIA"

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=60, unique=True)
    provider_account = models.ForeignKey(
        ProviderAccount, on_delete=models.PROTECT, related_name="instance_types"
    )
    provider_size = models.CharField(max_length=100, help_text=_("Provider size slug"))
    image = models.CharField(max_length=100, default="gpu-amd-base")
    gpu_vendor = models.CharField(max_length=16, choices=Vendor.choices)
    gpu_model = models.CharField(max_length=64)
    gpu_count = models.PositiveSmallIntegerField(
        validators=[MinValueValidator(1), MaxValueValidator(64)]
    )
    vram_gb_per_gpu = models.PositiveIntegerField(validators=[MaxValueValidator(65536)])
    # gfx target on AMD (gfx942), compute capability on NVIDIA (9.0).
    gpu_arch = models.CharField(max_length=32)
    # Copied onto each booking when it is made: a change applies to bookings made afterwards.
    price_per_hour = models.DecimalField(
        max_digits=10, decimal_places=4, validators=[MinValueValidator(0)]
    )
    agent_profile = models.CharField(max_length=64, blank=True)
    expected_baselines = models.JSONField(default=dict, blank=True)
    is_active = models.BooleanField(default=True)

    def __str__(self) -> str:
        return self.name


# The agent's smoke tests (labgpu_agent.smoke.SMOKE_NAMES); a pool requires some or all of them.
SMOKE_TESTS = ("matmul", "bandwidth", "sdxl", "llm")


def default_required_smoke() -> list[str]:
    return list(SMOKE_TESTS)


def validate_smoke_list(value: object) -> None:
    if not isinstance(value, list) or any(name not in SMOKE_TESTS for name in value):
        raise ValidationError(
            _("Required smoke tests must be a list drawn from %(known)s."),
            params={"known": ", ".join(SMOKE_TESTS)},
        )


REGION_SLUG = re.compile(r"^[a-z]{3}[0-9]$")  # DigitalOcean's region slugs: tor1, atl1, nyc2…
MAX_FALLBACK_REGIONS = 8


def validate_fallback_regions(value: object) -> None:
    if (
        not isinstance(value, list)
        or len(value) > MAX_FALLBACK_REGIONS
        or any(not isinstance(r, str) or not REGION_SLUG.match(r) for r in value)
        or len(set(value)) != len(value)
    ):
        raise ValidationError(
            _("Fallback regions must be a list of at most %(n)s distinct region slugs like atl1."),
            params={"n": MAX_FALLBACK_REGIONS},
        )


class NodePool(BaseModel):
    """Up to `capacity` concurrent nodes of one instance type in one region, with booking rules.

    When the region has no stock of the size, provisioning tries `fallback_regions` in order.
    """

    class VolumeScope(models.TextChoices):
        NONE = "none", _("No persistent volume")
        USER = "user", _("One volume per user")
        LAB = "lab", _("One volume per lab")

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=60, unique=True)
    instance_type = models.ForeignKey(InstanceType, on_delete=models.PROTECT, related_name="pools")
    region = models.CharField(max_length=32)
    fallback_regions = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_fallback_regions],
        help_text=_("Regions to try, in order, when the pool's region has no capacity."),
    )
    capacity = models.PositiveSmallIntegerField(
        validators=[MinValueValidator(1), MaxValueValidator(MAX_CAPACITY)]
    )
    granularity_minutes = models.PositiveSmallIntegerField(
        default=30, validators=[MinValueValidator(1), MaxValueValidator(DAY_MINUTES)]
    )
    min_duration_minutes = models.PositiveIntegerField(
        default=30, validators=[MinValueValidator(1), MaxValueValidator(YEAR_MINUTES)]
    )
    max_duration_minutes = models.PositiveIntegerField(
        default=7 * DAY_MINUTES, validators=[MinValueValidator(1), MaxValueValidator(YEAR_MINUTES)]
    )
    max_days_ahead = models.PositiveSmallIntegerField(
        default=60, validators=[MaxValueValidator(3650)]
    )
    provisioning_lead_minutes = models.PositiveSmallIntegerField(
        default=10, validators=[MaxValueValidator(DAY_MINUTES)]
    )
    teardown_grace_minutes = models.PositiveSmallIntegerField(
        default=5, validators=[MaxValueValidator(DAY_MINUTES)]
    )
    requires_approval = models.BooleanField(default=False)
    # How long a slot freed for the waitlist is held for the entry it is offered to
    # (labgpu.waitlist) before it passes to the next entry.
    waitlist_hold_minutes = models.PositiveSmallIntegerField(
        default=15, validators=[MinValueValidator(1), MaxValueValidator(DAY_MINUTES)]
    )
    # Idle reclaim (issue 15): after this many minutes with every GPU idle and no SSH session the
    # owner is warned; `idle_grace_minutes` later, still idle and not kept, the booking ends early.
    # None: off (the default).
    idle_reclaim_minutes = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(5), MaxValueValidator(1440)]
    )
    idle_grace_minutes = models.PositiveSmallIntegerField(
        default=30, validators=[MinValueValidator(1), MaxValueValidator(1440)]
    )
    allowed_labs = models.ManyToManyField(
        "accounts.Lab",
        blank=True,
        related_name="pools",
        help_text=_("Empty: every lab may book this pool."),
    )
    is_active = models.BooleanField(default=True)
    # A node whose agent cannot run one of these fails its health gate (never a silent skip).
    required_smoke = models.JSONField(
        default=default_required_smoke,
        blank=True,
        validators=[validate_smoke_list],
        help_text=_("Smoke tests every node of this pool must pass: matmul, bandwidth, sdxl, llm."),
    )
    # Issue 23: the agent's deep check (GEMM burn, HBM patterns, host and peer bandwidth) before
    # each node is handed over; nodes are made per booking, so this is also "between bookings".
    deep_at_handover = models.BooleanField(
        default=False,
        help_text=_(
            "Every node of this pool runs the deep check (labgpu-agent check --deep: a few "
            "minutes of GPU stress) before it is handed over."
        ),
    )
    smoke_preinstalled = models.BooleanField(
        default=False,
        help_text=_(
            "The image already has PyTorch, diffusers and transformers: cloud-init installs the "
            "agent without its smoke extra."
        ),
    )

    volume_scope = models.CharField(
        max_length=8,
        choices=VolumeScope.choices,
        default=VolumeScope.NONE,
        help_text=_(
            "Nodes get a block-storage volume mounted at /data that outlives them: each user's "
            "own, or one shared by the booking's lab."
        ),
    )
    max_volume_gb = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_VOLUME_GB)],
        help_text=_(
            "The largest volume (GB) researchers may create or grow in this pool; empty: the "
            "site's default limit."
        ),
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(granularity_minutes__gte=1), name="pool_granularity_positive"
            ),
            models.CheckConstraint(
                condition=Q(max_duration_minutes__gte=F("min_duration_minutes")),
                name="pool_max_duration_gte_min",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def regions(self) -> list[str]:
        """The pool's region, then its fallbacks: where provisioning may create its nodes."""
        return [self.region, *(r for r in self.fallback_regions or [] if r != self.region)]

    @property
    def volume_limit_gb(self) -> int:
        """The largest volume of this pool: its own limit, else the site's."""
        return int(self.max_volume_gb or settings.LABGPU_VOLUME_MAX_GB)


class Blackout(BaseModel):
    """A maintenance window: nothing may be booked in the pool during it."""

    pool = models.ForeignKey(NodePool, on_delete=models.CASCADE, related_name="blackouts")
    start = models.DateTimeField()
    end = models.DateTimeField()
    reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["start"]
        constraints = [
            models.CheckConstraint(condition=Q(end__gt=F("start")), name="blackout_end_after_start")
        ]

    def __str__(self) -> str:
        return f"{self.pool} {self.start:%Y-%m-%d %H:%M}–{self.end:%H:%M}"

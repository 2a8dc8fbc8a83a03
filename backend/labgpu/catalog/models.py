import os
import re

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from labgpu.core.models import BaseModel

ENV_VAR_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# Explicit bounds: they are real limits, and they keep the OpenAPI schema the same on every
# database (Django otherwise derives integer bounds from the backend's column types).
MAX_CAPACITY = 1000
DAY_MINUTES = 24 * 60
YEAR_MINUTES = 366 * DAY_MINUTES


def validate_env_var_name(value: str) -> None:
    if not ENV_VAR_NAME.match(value):
        raise ValidationError(_("Name an environment variable, e.g. DIGITALOCEAN_TOKEN."))


class ProviderAccount(BaseModel):
    """A cloud account. The credential is a *reference* to an environment variable."""

    class Kind(models.TextChoices):
        DIGITALOCEAN = "digitalocean", "DigitalOcean"
        EMULATOR = "emulator", _("Emulator")

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    api_base_url = models.URLField(default="https://api.digitalocean.com")
    token_env_var = models.CharField(max_length=100, validators=[validate_env_var_name])
    is_active = models.BooleanField(default=True)

    def __str__(self) -> str:
        return self.name

    @property
    def token_configured(self) -> bool:
        return bool(os.environ.get(self.token_env_var))


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
    price_per_hour = models.DecimalField(max_digits=10, decimal_places=4)
    agent_profile = models.CharField(max_length=64, blank=True)
    expected_baselines = models.JSONField(default=dict, blank=True)
    is_active = models.BooleanField(default=True)

    def __str__(self) -> str:
        return self.name


class NodePool(BaseModel):
    """Up to `capacity` concurrent nodes of one instance type in one region, with booking rules."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=60, unique=True)
    instance_type = models.ForeignKey(InstanceType, on_delete=models.PROTECT, related_name="pools")
    region = models.CharField(max_length=32)
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
    allowed_labs = models.ManyToManyField(
        "accounts.Lab",
        blank=True,
        related_name="pools",
        help_text=_("Empty: every lab may book this pool."),
    )
    is_active = models.BooleanField(default=True)

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

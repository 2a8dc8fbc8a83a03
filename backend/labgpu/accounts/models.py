import zoneinfo

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from labgpu.core.models import BaseModel

# The IANA names this server knows, read once: `available_timezones()` walks the tzdata tree on
# every call (~600 names).
TIME_ZONES: frozenset[str] = frozenset(zoneinfo.available_timezones())


def validate_timezone(value: str) -> None:
    if value not in TIME_ZONES:
        raise ValidationError(_("Unknown time zone: %(tz)s"), params={"tz": value})


class User(AbstractUser):
    """A person. Site admins are `is_staff`; lab roles live on Membership."""

    timezone = models.CharField(max_length=64, default="UTC", validators=[validate_timezone])
    language = models.CharField(
        max_length=16, choices=[("en", "English"), ("zh-hans", "简体中文")], default="en"
    )
    # The address its owner proved: they opened a link sent to it (a verification or the
    # invitation they signed up from), or a site admin or an identity provider vouched for it.
    # `email` counts (invitations, adoption, notifications) only while it equals this one, so a
    # write to `email` that skips verification leaves it unverified (labgpu.accounts.emails).
    verified_email = models.EmailField(blank=True, default="")
    # A change asked for and not yet proved: the new address, a SHA-256 of the link's secret
    # (single use: cleared when used) and when the link dies. `email` stays the old one meanwhile.
    pending_email = models.EmailField(blank=True, default="")
    pending_email_token_hash = models.CharField(max_length=64, null=True, blank=True, unique=True)
    pending_email_expires_at = models.DateTimeField(null=True, blank=True)

    @property
    def is_site_admin(self) -> bool:
        return bool(self.is_staff)


class Lab(BaseModel):
    class RemovedMemberBookings(models.TextChoices):
        """What happens to a member's bookings that have not started when a directory sync
        removes them from the lab (labgpu.sso.services.sync_memberships)."""

        KEEP = "keep", _("Keep them")
        CANCEL = "cancel", _("Cancel them and tell the member")

    name = models.CharField(max_length=120, unique=True)
    slug = models.SlugField(max_length=60, unique=True)
    removed_member_bookings = models.CharField(
        max_length=8, choices=RemovedMemberBookings.choices, default=RemovedMemberBookings.KEEP
    )
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="labs"
    )
    # An archived lab keeps its history (bookings, usage, quotas) but books nothing new.
    is_active = models.BooleanField(default=True)
    # Whether the lab or one of its cost centres has a budget (kept by labgpu.budgets.services):
    # loaded with the lab on every booking, so a lab without one pays no query for the budget rule.
    has_budget = models.BooleanField(default=False)

    def __str__(self) -> str:
        return self.name


class Membership(BaseModel):
    class Role(models.TextChoices):
        MEMBER = "member", _("Member")
        LAB_ADMIN = "lab_admin", _("Lab admin")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    lab = models.ForeignKey(Lab, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    # Per-member limits set by the lab admin; null means "no limit beyond the lab's quota".
    max_hours_per_week = models.PositiveIntegerField(
        null=True, blank=True, validators=[MaxValueValidator(7 * 24)]
    )
    max_concurrent_bookings = models.PositiveIntegerField(
        null=True, blank=True, validators=[MaxValueValidator(1000)]
    )
    # Who made this membership: "" a person (site admin, invitation), or the directory sync that
    # manages it ("oidc", "ldap"). A sync only ever changes or removes the ones it made.
    source = models.CharField(max_length=16, blank=True, default="")
    # The cost centre the member's bookings carry unless they name another (labgpu.budgets).
    default_cost_centre = models.ForeignKey(
        "budgets.CostCentre",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="membership_defaults",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "lab"], name="membership_unique_user_lab")
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.lab} ({self.role})"


class SshKey(BaseModel):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ssh_keys"
    )
    name = models.CharField(max_length=100)
    public_key = models.TextField()
    fingerprint = models.CharField(max_length=100)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "fingerprint"], name="sshkey_unique_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.fingerprint})"


class ApiToken(BaseModel):
    """A personal API token. Only a SHA-256 of the secret is stored; the secret is shown once.

    Calendar feeds a token creates (scope `feeds`) live only as long as the token does."""

    class Scope(models.TextChoices):
        READ = "read", _("Read")
        BOOK = "book", _("Book")
        FEEDS = "feeds", _("Calendar feeds")
        ADMIN = "admin", _("Administer")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, db_index=True)
    secret_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

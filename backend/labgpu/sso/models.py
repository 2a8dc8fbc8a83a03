from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from labgpu.accounts.models import Lab
from labgpu.core.models import BaseModel


class GroupMapping(BaseModel):
    """A directory group (an LDAP group DN, a value of the OIDC groups claim) that makes its
    members members, lab admins or site admins. Matched case-insensitively, as directories do."""

    class Role(models.TextChoices):
        MEMBER = "member", _("Member")
        LAB_ADMIN = "lab_admin", _("Lab admin")
        SITE_ADMIN = "site_admin", _("Site admin")

    group = models.CharField(max_length=255)
    # Empty for site admin, which is not a role in a lab.
    lab = models.ForeignKey(
        Lab, null=True, blank=True, on_delete=models.CASCADE, related_name="group_mappings"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["group", "lab"], name="groupmapping_unique_group_lab"),
            models.UniqueConstraint(
                fields=["group"],
                condition=Q(lab__isnull=True),
                name="groupmapping_unique_site_admin_group",
            ),
            models.CheckConstraint(
                condition=Q(role="site_admin", lab__isnull=True)
                | (~Q(role="site_admin") & Q(lab__isnull=False)),
                name="groupmapping_lab_iff_lab_role",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.group} → {self.lab or ''} {self.role}".strip()


class SiteAdminGrant(BaseModel):
    """Marks a site admin whom a directory sync made one, so that the sync may also unmake them;
    site admins made by hand have no grant and no sync touches them."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="site_admin_grant"
    )
    source = models.CharField(max_length=16)

    def __str__(self) -> str:
        return f"{self.user} ({self.source})"


class OidcIdentity(BaseModel):
    """Who a person is at an OpenID Provider: its issuer and the `sub` it gives them, which never
    changes (an e-mail address or a username can). Sign-ins find the user through this."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="oidcidentity_unique_sub"),
            models.UniqueConstraint(fields=["user", "issuer"], name="oidcidentity_one_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.issuer}"

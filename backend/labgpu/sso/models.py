from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from labgpu.accounts.models import Lab
from labgpu.core.models import BaseModel


class GroupMapping(BaseModel):
    """A directory group that makes its members members or lab admins of a lab, named without
    ambiguity (issue 22 item 3): an LDAP group by its full DN (compared as a DN: case-insensitive,
    as directories compare them), an OIDC group by its issuer and the claim's exact value.

    Site-admin groups are not rows: they come from the environment only
    (LABGPU_LDAP_SITE_ADMIN_GROUP_DNS, LABGPU_OIDC_SITE_ADMIN_GROUPS), so nobody who can write
    the database or the API can make a directory group's members site admins. Rows from before
    (by cn, or for site admin) were kept but switched off (`active`, `inactive_reason`)."""

    class Role(models.TextChoices):
        MEMBER = "member", _("Member")
        LAB_ADMIN = "lab_admin", _("Lab admin")
        # Only on rows switched off by migration 0003; no new row may have it.
        SITE_ADMIN = "site_admin", _("Site admin")

    class Source(models.TextChoices):
        LDAP = "ldap", _("LDAP group (full DN)")
        OIDC = "oidc", _("OIDC groups claim (issuer and exact value)")

    source = models.CharField(max_length=8, choices=Source.choices, default=Source.LDAP)
    # The OpenID Provider's issuer for an OIDC mapping; empty for LDAP.
    issuer = models.CharField(max_length=255, blank=True, default="")
    group = models.CharField(max_length=512)
    active = models.BooleanField(default=True)
    inactive_reason = models.CharField(max_length=255, blank=True, default="")
    # Empty for site admin, which is not a role in a lab.
    lab = models.ForeignKey(
        Lab, null=True, blank=True, on_delete=models.CASCADE, related_name="group_mappings"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["source", "issuer", "group", "lab"], name="groupmapping_unique_group_lab"
            ),
            models.UniqueConstraint(
                fields=["source", "issuer", "group"],
                condition=Q(lab__isnull=True),
                name="groupmapping_unique_site_admin_group",
            ),
            models.CheckConstraint(
                condition=~Q(role="site_admin", active=True),
                name="groupmapping_no_active_site_admin_row",
            ),
            models.CheckConstraint(
                condition=Q(role="site_admin", lab__isnull=True)
                | (~Q(role="site_admin") & Q(lab__isnull=False)),
                name="groupmapping_lab_iff_lab_role",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.group} → {self.lab or ''} {self.role}".strip()


class IdentityLink(BaseModel):
    """How an external identity came to be bound to a local account (invariant I-10): only
    by (issuer, sub) or (directory, entryUUID/DN), never by a name. Links made by username
    before issue 22 are `username` and stay flagged until a site admin confirms or cuts them."""

    class Method(models.TextChoices):
        CREATED = "created", _("The first sign-in created the account")
        USER = "user", _("Linked by the person, signed in to the account")
        ADMIN = "admin", _("Pre-linked by a site admin")
        VERIFIED_EMAIL = "verified_email", _("Adopted by a verified e-mail address")
        USERNAME = "username", _("Matched by username (before issue 22): to review")

    link_method = models.CharField(max_length=16, choices=Method.choices, default=Method.CREATED)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        abstract = True

    @property
    def flagged(self) -> bool:
        return self.link_method == self.Method.USERNAME and self.confirmed_at is None

    def usable_for_sign_in(self) -> bool:
        """A flagged link signs nobody in as a site admin until a site admin confirms it."""
        return not (self.flagged and self.user.is_site_admin)


class SiteAdminGrant(BaseModel):
    """Marks a site admin whom a directory sync made one, so that the sync may also unmake them;
    site admins made by hand have no grant and no sync touches them."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="site_admin_grant"
    )
    source = models.CharField(max_length=16)

    def __str__(self) -> str:
        return f"{self.user} ({self.source})"


class OidcIdentity(IdentityLink):
    """Who a person is at an OpenID Provider: its issuer and the `sub` it gives them, which never
    changes (an e-mail address or a username can). Sign-ins find the user through this."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)

    class Meta:
        verbose_name_plural = "OIDC identities"
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="oidcidentity_unique_sub"),
            models.UniqueConstraint(fields=["user", "issuer"], name="oidcidentity_one_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.issuer}"

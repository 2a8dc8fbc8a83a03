"""Directory groups → lab memberships and site admins (issue 16 item 3).

Both sign-in paths call `sync_memberships`: OIDC at each login (labgpu.sso.oidc) and LDAP at each
login and from its periodic task. A sync only changes what a sync made (Membership.source,
SiteAdminGrant), so memberships and site admins made by hand are never touched.
"""

import zoneinfo
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Lower

from labgpu.accounts.models import Lab, Membership, User
from labgpu.audit.services import audit_record
from labgpu.bookings.models import Booking
from labgpu.bookings.services import booking_cancel
from labgpu.core.errors import ApplicationError, Conflict, NotPermitted
from labgpu.sso import notifications
from labgpu.sso.models import GroupMapping, OidcIdentity, SiteAdminGrant

_LAB_ROLE_RANK = {Membership.Role.MEMBER: 1, Membership.Role.LAB_ADMIN: 2}


@dataclass
class SyncResult:
    """What one sync changed, by lab slug; for logs and tests."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    cancelled_booking_ids: list[int] = field(default_factory=list)
    site_admin_granted: bool = False
    site_admin_revoked: bool = False


def _wanted(groups: set[str]) -> tuple[dict[int, str], bool]:
    """The lab roles (highest per lab) and site-admin status that `groups` map to."""
    folded = [group.lower() for group in groups]
    wanted: dict[int, str] = {}
    site_admin = False
    mappings = GroupMapping.objects.annotate(folded=Lower("group")).filter(folded__in=folded)
    for mapping in mappings:
        if mapping.role == GroupMapping.Role.SITE_ADMIN:
            site_admin = True
        elif mapping.lab_id is not None and _LAB_ROLE_RANK[mapping.role] > _LAB_ROLE_RANK.get(
            wanted.get(mapping.lab_id, ""), 0
        ):
            wanted[mapping.lab_id] = mapping.role
    return wanted, site_admin


@transaction.atomic
def sync_memberships(*, user: User, groups: set[str], source: str) -> SyncResult:
    """Make the memberships that `source` manages for `user` match the mappings of `groups`:
    add missing ones, change roles, remove those whose group went away (the lab's
    `removed_member_bookings` policy decides the fate of their bookings that have not started).
    Memberships someone made by hand are left as they are, whatever the groups say."""
    if not source:
        raise ValueError("a sync needs a source name, e.g. 'oidc' or 'ldap'")
    # Two sign-ins of one person at once must not both add the same membership.
    user = User.objects.select_for_update().get(pk=user.pk)
    wanted, site_admin = _wanted(groups)
    result = SyncResult()
    have = {m.lab_id: m for m in Membership.objects.filter(user=user).select_related("lab")}
    labs = Lab.objects.in_bulk(list(wanted))
    for lab_id, role in sorted(wanted.items()):
        membership = have.get(lab_id)
        if membership is None:
            membership = Membership.objects.create(
                user=user, lab=labs[lab_id], role=role, source=source
            )
            result.added.append(membership.lab.slug)
            audit_record(
                actor=None,
                action="membership.sync_add",
                target=membership,
                lab=membership.lab,
                data={"user": user.username, "role": role, "source": source},
            )
        elif membership.source and membership.role != role:
            old_role = membership.role
            membership.role = role
            membership.save(update_fields=["role", "updated_at"])
            result.updated.append(membership.lab.slug)
            audit_record(
                actor=None,
                action="membership.sync_update",
                target=membership,
                lab=membership.lab,
                data={"user": user.username, "from": old_role, "to": role, "source": source},
            )
    for lab_id, membership in sorted(have.items()):
        if membership.source == source and lab_id not in wanted:
            result.cancelled_booking_ids += _remove(membership)
            result.removed.append(membership.lab.slug)
    _sync_site_admin(user=user, site_admin=site_admin, source=source, result=result)
    return result


def _remove(membership: Membership) -> list[int]:
    """Remove a synced membership; cancel the member's bookings in the lab that have not started
    when the lab says so. Returns the cancelled bookings' ids."""
    lab, user = membership.lab, membership.user
    cancelled: list[Booking] = []
    if lab.removed_member_bookings == Lab.RemovedMemberBookings.CANCEL:
        future = Booking.objects.filter(
            user=user, lab=lab, status__in=[Booking.Status.PENDING, Booking.Status.SCHEDULED]
        ).order_by("start")
        for booking in future:
            # The member cancels their own booking (booking_cancel's one rule for cancelling);
            # the reason names the sync, and the audit entry below ties the two together.
            cancelled.append(
                booking_cancel(
                    actor=user,
                    booking=booking,
                    reason=f"Removed from {lab.name} by the directory sync ({membership.source}).",
                )
            )
    audit_record(
        actor=None,
        action="membership.sync_remove",
        target=membership,
        lab=lab,
        data={
            "user": user.username,
            "role": membership.role,
            "source": membership.source,
            "policy": lab.removed_member_bookings,
            "cancelled_bookings": [booking.pk for booking in cancelled],
        },
    )
    membership.delete()
    if cancelled:
        transaction.on_commit(
            lambda: notifications.bookings_cancelled_on_removal(
                user=user, lab=lab, bookings=cancelled
            )
        )
    return [booking.pk for booking in cancelled]


def _sync_site_admin(*, user: User, site_admin: bool, source: str, result: SyncResult) -> None:
    grant = SiteAdminGrant.objects.filter(user=user).first()
    if site_admin and not user.is_staff:
        user.is_staff = user.is_superuser = True
        user.save(update_fields=["is_staff", "is_superuser"])
        SiteAdminGrant.objects.update_or_create(user=user, defaults={"source": source})
        result.site_admin_granted = True
        audit_record(
            actor=None,
            action="user.sync_site_admin_grant",
            target=user,
            data={"user": user.username, "source": source},
        )
    elif not site_admin and grant is not None and grant.source == source:
        grant.delete()
        if user.is_staff:
            user.is_staff = user.is_superuser = False
            user.save(update_fields=["is_staff", "is_superuser"])
            result.site_admin_revoked = True
            audit_record(
                actor=None,
                action="user.sync_site_admin_revoke",
                target=user,
                data={"user": user.username, "source": source},
            )


def _mapping_data(mapping: GroupMapping) -> dict[str, object]:
    return {
        "group": mapping.group,
        "lab": mapping.lab.slug if mapping.lab else None,
        "role": mapping.role,
    }


@transaction.atomic
def group_mapping_save(*, actor: User, mapping: GroupMapping) -> GroupMapping:
    """Create or change a mapping (site admins only); takes effect at each user's next sync."""
    if not actor.is_site_admin:
        raise NotPermitted("Only site admins map directory groups.", code="not_site_admin")
    if mapping.role == GroupMapping.Role.SITE_ADMIN:
        mapping.lab = None
    elif mapping.lab_id is None:
        raise ApplicationError(
            "Pick the lab this group's members join.", code="lab_required", field="lab"
        )
    duplicate = GroupMapping.objects.filter(group__iexact=mapping.group, lab=mapping.lab).exclude(
        pk=mapping.pk
    )
    if duplicate.exists():
        raise Conflict(
            "This group is already mapped for this lab.", code="duplicate_mapping", field="group"
        )
    created = mapping.pk is None
    mapping.save()
    audit_record(
        actor=actor,
        action="sso.mapping_create" if created else "sso.mapping_update",
        target=mapping,
        lab=mapping.lab,
        data=_mapping_data(mapping),
    )
    return mapping


@transaction.atomic
def group_mapping_delete(*, actor: User, mapping: GroupMapping) -> None:
    if not actor.is_site_admin:
        raise NotPermitted("Only site admins map directory groups.", code="not_site_admin")
    audit_record(
        actor=actor,
        action="sso.mapping_delete",
        target=mapping,
        lab=mapping.lab,
        data=_mapping_data(mapping),
    )
    mapping.delete()


class SsoRefused(ApplicationError):
    """A provider's answer that LabGPU will not sign anyone in with."""

    status_code = 403
    default_code = "sso_refused"


def language_from_locale(locale: object) -> str | None:
    """The User.language for an OIDC `locale` claim (BCP 47: "zh-CN", "zh_Hans", "en-GB")."""
    if not isinstance(locale, str):
        return None
    primary = locale.replace("_", "-").lower().split("-")[0]
    return {"zh": "zh-hans", "en": "en"}.get(primary)


def timezone_from_claim(value: object) -> str | None:
    return value if isinstance(value, str) and value in zoneinfo.available_timezones() else None


def _claim_text(claims: dict[str, Any], name: str, limit: int) -> str:
    value = claims.get(name) if name else None
    return value.strip()[:limit] if isinstance(value, str) else ""


@transaction.atomic
def oidc_user_upsert(*, issuer: str, claims: dict[str, Any]) -> User:
    """The user an OpenID Provider's verified claims name, created at their first sign-in.

    Found by (issuer, sub). A first sign-in creates the user from the username claim, or links
    the existing account of that username if it has no identity at this issuer yet (so local
    accounts move to SSO). E-mail and names follow the provider at every sign-in; time zone and
    language are filled from `zoneinfo` and `locale` at creation only, as people change them."""
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise SsoRefused("The provider sent no subject.")
    identity = (
        OidcIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    )
    if identity is not None:
        user = identity.user
    else:
        username = _claim_text(claims, settings.LABGPU_OIDC_USERNAME_CLAIM, 150)
        if not username:
            raise SsoRefused(f"The provider sent no {settings.LABGPU_OIDC_USERNAME_CLAIM!r} claim.")
        user = User.objects.filter(username=username).first()
        if user is None:
            user = User(
                username=username,
                timezone=timezone_from_claim(claims.get("zoneinfo")) or "UTC",
                language=language_from_locale(claims.get("locale")) or "en",
            )
            user.set_unusable_password()
            user.save()
            action = "user.sso_create"
        elif OidcIdentity.objects.filter(user=user, issuer=issuer).exists():
            raise SsoRefused(f"{username} is already linked to another account at the provider.")
        else:
            action = "user.sso_link"
        identity = OidcIdentity.objects.create(user=user, issuer=issuer, subject=subject)
        audit_record(
            actor=None,
            action=action,
            target=user,
            data={"user": user.username, "issuer": issuer, "subject": subject},
        )
    changed = []
    for field_name, claim, limit in (
        ("email", settings.LABGPU_OIDC_EMAIL_CLAIM, 254),
        ("first_name", "given_name", 150),
        ("last_name", "family_name", 150),
    ):
        value = _claim_text(claims, claim, limit)
        if value and getattr(user, field_name) != value:
            setattr(user, field_name, value)
            changed.append(field_name)
    if changed:
        user.save(update_fields=changed)
    return user

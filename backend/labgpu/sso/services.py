"""Directory groups → lab memberships and site admins (issue 16 item 3).

Both sign-in paths call `sync_memberships`: OIDC at each login (labgpu.sso.oidc) and LDAP at each
login and from its periodic task. A sync only changes what a sync made (Membership.source,
SiteAdminGrant), so memberships and site admins made by hand are never touched.
"""

from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from labgpu.accounts.models import Lab, Membership, User
from labgpu.audit.services import audit_record
from labgpu.bookings.models import Booking
from labgpu.bookings.services import booking_cancel, pools_lock
from labgpu.core.errors import ApplicationError, Conflict, NotPermitted
from labgpu.sso import notifications
from labgpu.sso.models import GroupMapping, SiteAdminGrant

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


def normalise_dn(dn: str) -> str:
    """A DN in one spelling for comparison: attribute types and values case-folded (group cn and
    ou values compare case-insensitively in LDAP), spaces around separators dropped (RFC 4514
    parsing). Raises ValueError for a string that is not a DN."""
    import ldap.dn  # python-ldap: only LDAP deployments compare DNs

    try:
        parts = ldap.dn.str2dn(dn)
    except ldap.DECODING_ERROR as invalid:
        raise ValueError(f"not a DN: {dn!r}") from invalid
    if not parts:
        raise ValueError("an empty DN")
    return ldap.dn.dn2str(
        [[(kind.lower(), value.lower(), flags) for kind, value, flags in rdn] for rdn in parts]
    )


def _ldap_keys(groups: set[str]) -> set[str]:
    keys = set()
    for group in groups:
        try:
            keys.add(normalise_dn(group))
        except ValueError:
            continue  # a bare name is no DN: it maps to nothing
    return keys


def _matching_mappings(*, groups: set[str], source: str, issuer: str) -> list[GroupMapping]:
    active = GroupMapping.objects.filter(active=True, source=source).exclude(
        role=GroupMapping.Role.SITE_ADMIN
    )
    if source == GroupMapping.Source.OIDC:
        return list(active.filter(issuer=issuer, group__in=sorted(groups)))
    keys = _ldap_keys(groups)
    # A stored row that is no DN (written before issue 22, or straight into the database) maps
    # nothing.
    return [mapping for mapping in active if _ldap_keys({mapping.group}) & keys]


def site_admin_groups(source: str, issuer: str = "") -> tuple[set[str], bool]:
    """The environment's site-admin groups for `source` (OIDC: of the configured issuer only),
    and whether they compare as DNs."""
    if source == GroupMapping.Source.OIDC:
        if issuer != settings.LABGPU_OIDC_ISSUER:
            return set(), False
        return set(settings.LABGPU_OIDC_SITE_ADMIN_GROUPS), False
    return _ldap_keys(set(settings.LABGPU_LDAP_SITE_ADMIN_GROUP_DNS)), True


def _wanted(*, groups: set[str], source: str, issuer: str) -> tuple[dict[int, str], bool]:
    """The lab roles (highest per lab) and site-admin status that `groups` map to: OIDC values
    exactly and only for their issuer, LDAP groups by full DN."""
    wanted: dict[int, str] = {}
    for mapping in _matching_mappings(groups=groups, source=source, issuer=issuer):
        if mapping.lab_id is not None and _LAB_ROLE_RANK[mapping.role] > _LAB_ROLE_RANK.get(
            wanted.get(mapping.lab_id, ""), 0
        ):
            wanted[mapping.lab_id] = mapping.role
    admin_groups, as_dns = site_admin_groups(source, issuer)
    site_admin = bool(admin_groups & (_ldap_keys(groups) if as_dns else groups))
    return wanted, site_admin


@transaction.atomic
def sync_memberships(*, user: User, groups: set[str], source: str, issuer: str = "") -> SyncResult:
    """Make the memberships that `source` manages for `user` match the mappings of `groups`
    (for OIDC, the mappings of `issuer`):
    add missing ones, change roles, remove those whose group went away (the lab's
    `removed_member_bookings` policy decides the fate of their bookings that have not started).
    Memberships someone made by hand are left as they are, whatever the groups say."""
    if not source:
        raise ValueError("a sync needs a source name, e.g. 'oidc' or 'ldap'")
    # Two sign-ins of one person at once must not both add the same membership.
    user = User.objects.select_for_update().get(pk=user.pk)
    wanted, site_admin = _wanted(groups=groups, source=source, issuer=issuer)
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
        pools_lock(booking.pool_id for booking in future)  # before booking_cancel takes each
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
        "source": mapping.source,
        "issuer": mapping.issuer,
        "group": mapping.group,
        "lab": mapping.lab.slug if mapping.lab else None,
        "role": mapping.role,
    }


@transaction.atomic
def group_mapping_save(*, actor: User, mapping: GroupMapping) -> GroupMapping:
    """Create or change a mapping (site admins only); takes effect at each user's next sync."""
    if not actor.is_site_admin:
        raise NotPermitted(_("Only site admins map directory groups."), code="not_site_admin")
    if mapping.role == GroupMapping.Role.SITE_ADMIN:
        raise ApplicationError(
            _(
                "Site-admin groups are set in the environment only "
                "(LABGPU_LDAP_SITE_ADMIN_GROUP_DNS, LABGPU_OIDC_SITE_ADMIN_GROUPS)."
            ),
            code="site_admin_from_environment",
            field="role",
        )
    if mapping.lab_id is None:
        raise ApplicationError(
            _("Pick the lab this group's members join."), code="lab_required", field="lab"
        )
    if mapping.source == GroupMapping.Source.LDAP:
        mapping.issuer = ""
        try:
            normalise_dn(mapping.group)
        except ValueError:
            raise ApplicationError(
                _("An LDAP group is named by its full DN, e.g. cn=vision,ou=groups,dc=uni,dc=edu."),
                code="group_not_a_dn",
                field="group",
            ) from None
    else:
        mapping.issuer = mapping.issuer or settings.LABGPU_OIDC_ISSUER
        if not mapping.issuer:
            raise ApplicationError(
                _("An OIDC group needs the issuer whose groups claim carries it."),
                code="issuer_required",
                field="issuer",
            )
    # A mapping saved through the service is one a site admin has looked at: it counts again.
    mapping.active, mapping.inactive_reason = True, ""
    duplicate = GroupMapping.objects.filter(
        source=mapping.source, issuer=mapping.issuer, lab=mapping.lab
    ).exclude(pk=mapping.pk)
    if mapping.source == GroupMapping.Source.OIDC:
        duplicate = duplicate.filter(group=mapping.group)
    else:
        key = normalise_dn(mapping.group)
        duplicate = [other for other in duplicate if _same_dn(other.group, key)]
    if duplicate:
        raise Conflict(
            _("This group is already mapped for this lab."), code="duplicate_mapping", field="group"
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


def _same_dn(group: str, key: str) -> bool:
    try:
        return normalise_dn(group) == key
    except ValueError:
        return False


@transaction.atomic
def group_mapping_delete(*, actor: User, mapping: GroupMapping) -> None:
    if not actor.is_site_admin:
        raise NotPermitted(_("Only site admins map directory groups."), code="not_site_admin")
    audit_record(
        actor=actor,
        action="sso.mapping_delete",
        target=mapping,
        lab=mapping.lab,
        data=_mapping_data(mapping),
    )
    mapping.delete()

"""sync_memberships: directory groups → memberships and site admins, removals included, manual
memberships never touched. Checked against rows: Membership, Booking, AuditEvent, mail outbox."""

from datetime import timedelta

import pytest
from django.core import mail

from labgpu.accounts.models import Lab, Membership
from labgpu.accounts.tests.factories import LabFactory, MembershipFactory, UserFactory
from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Booking
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.core.timeutils import now
from labgpu.sso.models import GroupMapping, SiteAdminGrant
from labgpu.sso.services import sync_memberships

pytestmark = pytest.mark.django_db


@pytest.fixture
def dana(db):
    return UserFactory(username="dana", email="dana@example.org")


@pytest.fixture
def vision(db):
    return LabFactory(name="Vision Lab", slug="vision")


@pytest.fixture
def language(db):
    return LabFactory(name="Language Lab", slug="language")


ISS = "https://idp.example"


@pytest.fixture
def mappings(settings, vision, language):
    """OIDC values of issuer ISS (compared exactly), one LDAP group by DN; site admins from the
    environment only."""
    settings.LABGPU_OIDC_ISSUER = ISS
    settings.LABGPU_OIDC_SITE_ADMIN_GROUPS = ["it-staff"]

    def oidc(group, lab, role):
        return GroupMapping.objects.create(
            source="oidc", issuer=ISS, group=group, lab=lab, role=role
        )

    return [
        oidc("cn=vision,ou=groups", vision, "member"),
        oidc("vision-admins", vision, "lab_admin"),
        oidc("language", language, "member"),
        GroupMapping.objects.create(
            source="ldap", group="cn=language,ou=groups,dc=uni", lab=language, role="member"
        ),
    ]


def roles_of(user) -> dict[str, tuple[str, str]]:
    return {
        m.lab.slug: (m.role, m.source)
        for m in Membership.objects.filter(user=user).select_related("lab")
    }


def test_groups_add_memberships_marked_with_their_source(dana, mappings):
    result = sync_memberships(
        user=dana, groups={"cn=vision,ou=groups", "language"}, source="oidc", issuer=ISS
    )

    assert roles_of(dana) == {"vision": ("member", "oidc"), "language": ("member", "oidc")}
    assert sorted(result.added) == ["language", "vision"]
    assert AuditEvent.objects.filter(action="membership.sync_add").count() == 2


def test_highest_mapped_role_wins_and_role_changes_follow_the_groups(dana, mappings):
    sync_memberships(
        user=dana, groups={"cn=vision,ou=groups", "vision-admins"}, source="oidc", issuer=ISS
    )
    assert roles_of(dana) == {"vision": ("lab_admin", "oidc")}

    result = sync_memberships(user=dana, groups={"cn=vision,ou=groups"}, source="oidc", issuer=ISS)

    assert roles_of(dana) == {"vision": ("member", "oidc")}
    assert result.updated == ["vision"]
    assert AuditEvent.objects.filter(action="membership.sync_update").count() == 1


def test_a_group_gone_removes_the_synced_membership(dana, mappings):
    sync_memberships(
        user=dana, groups={"cn=vision,ou=groups", "language"}, source="oidc", issuer=ISS
    )

    result = sync_memberships(user=dana, groups={"language"}, source="oidc", issuer=ISS)

    assert roles_of(dana) == {"language": ("member", "oidc")}
    assert result.removed == ["vision"]
    assert AuditEvent.objects.filter(action="membership.sync_remove").count() == 1


def test_manual_memberships_are_never_changed_or_removed(dana, mappings, vision, language):
    MembershipFactory(user=dana, lab=vision, role="lab_admin")  # made by a site admin
    MembershipFactory(user=dana, lab=language, role="member")

    result = sync_memberships(user=dana, groups={"cn=vision,ou=groups"}, source="oidc", issuer=ISS)

    assert roles_of(dana) == {"vision": ("lab_admin", ""), "language": ("member", "")}
    assert (result.added, result.updated, result.removed) == ([], [], [])


def test_a_sync_removes_only_what_its_own_source_made(dana, mappings):
    sync_memberships(user=dana, groups={"CN=Language,OU=Groups,DC=uni"}, source="ldap")

    sync_memberships(user=dana, groups=set(), source="oidc", issuer=ISS)

    assert roles_of(dana) == {"language": ("member", "ldap")}


def test_unmapped_groups_change_nothing(dana, mappings):
    result = sync_memberships(user=dana, groups={"staff", "students"}, source="oidc", issuer=ISS)

    assert roles_of(dana) == {}
    assert result == type(result)()


def test_site_admin_group_grants_and_its_loss_revokes(dana, mappings):
    sync_memberships(user=dana, groups={"IT-Staff"}, source="oidc", issuer=ISS)
    sync_memberships(user=dana, groups={"it-staff"}, source="oidc", issuer="https://other.example")
    dana.refresh_from_db()
    assert not dana.is_staff  # another case, another issuer: no site admin (issue 22)

    sync_memberships(user=dana, groups={"it-staff"}, source="oidc", issuer=ISS)
    dana.refresh_from_db()
    assert dana.is_staff and dana.is_superuser
    assert SiteAdminGrant.objects.get(user=dana).source == "oidc"

    result = sync_memberships(user=dana, groups=set(), source="oidc", issuer=ISS)

    dana.refresh_from_db()
    assert not dana.is_staff and not dana.is_superuser
    assert result.site_admin_revoked
    assert not SiteAdminGrant.objects.filter(user=dana).exists()


def test_hand_made_site_admins_stay_site_admins(mappings):
    carol = UserFactory(username="carol", is_staff=True, is_superuser=True)

    sync_memberships(user=carol, groups={"it-staff"}, source="oidc", issuer=ISS)
    sync_memberships(user=carol, groups=set(), source="oidc", issuer=ISS)

    carol.refresh_from_db()
    assert carol.is_staff and carol.is_superuser
    assert not SiteAdminGrant.objects.filter(user=carol).exists()


def _future_bookings(user, lab):
    start = now() + timedelta(days=2)
    return [
        BookingFactory(user=user, lab=lab, start=start, status=Booking.Status.SCHEDULED),
        BookingFactory(
            user=user, lab=lab, start=start + timedelta(days=1), status=Booking.Status.PENDING
        ),
    ]


def test_removal_keeps_future_bookings_when_the_lab_keeps_them(dana, mappings, vision):
    sync_memberships(user=dana, groups={"cn=vision,ou=groups"}, source="oidc", issuer=ISS)
    bookings = _future_bookings(dana, vision)

    sync_memberships(user=dana, groups=set(), source="oidc", issuer=ISS)

    statuses = set(Booking.objects.filter(pk__in=[b.pk for b in bookings]).values_list("status"))
    assert statuses == {("scheduled",), ("pending",)}
    assert mail.outbox == []


def test_removal_cancels_future_bookings_with_notice_when_the_lab_says_so(
    dana, mappings, vision, django_capture_on_commit_callbacks
):
    Lab.objects.filter(pk=vision.pk).update(
        removed_member_bookings=Lab.RemovedMemberBookings.CANCEL
    )
    sync_memberships(user=dana, groups={"cn=vision,ou=groups"}, source="oidc", issuer=ISS)
    bookings = _future_bookings(dana, vision)
    elsewhere = BookingFactory(user=dana, start=now() + timedelta(days=2))  # another lab's

    with django_capture_on_commit_callbacks(execute=True):
        result = sync_memberships(user=dana, groups=set(), source="oidc", issuer=ISS)

    ids = sorted(b.pk for b in bookings)
    assert sorted(result.cancelled_booking_ids) == ids
    assert set(Booking.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"cancelled"}
    elsewhere.refresh_from_db()
    assert elsewhere.status == "scheduled"
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["dana@example.org"]
    assert all(f"#{pk}" in mail.outbox[0].body for pk in ids)
    removal = AuditEvent.objects.get(action="membership.sync_remove")
    assert sorted(removal.data["cancelled_bookings"]) == ids


def test_only_site_admins_map_groups_and_each_change_is_audited(dana, vision):
    from labgpu.core.errors import NotPermitted
    from labgpu.sso.services import group_mapping_delete, group_mapping_save

    carol = UserFactory(username="carol", is_staff=True)
    with pytest.raises(NotPermitted):
        group_mapping_save(actor=dana, mapping=GroupMapping(group="cn=g,dc=uni", lab=vision))

    mapping = group_mapping_save(actor=carol, mapping=GroupMapping(group="cn=g,dc=uni", lab=vision))
    mapping.role = "lab_admin"
    group_mapping_save(actor=carol, mapping=mapping)
    group_mapping_delete(actor=carol, mapping=mapping)

    assert list(
        AuditEvent.objects.filter(actor=carol).order_by("pk").values_list("action", flat=True)
    ) == ["sso.mapping_create", "sso.mapping_update", "sso.mapping_delete"]
    assert not GroupMapping.objects.exists()

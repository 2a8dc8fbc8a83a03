"""Site admins create, rename and archive labs in the web app; nobody else can."""

from datetime import timedelta

import pytest

from labgpu.accounts.models import Lab, Membership
from labgpu.audit.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("who", ["as_alice", "as_bob"])
def test_only_site_admins_create_rename_or_archive_labs(request, who, vision_lab):
    client = request.getfixturevalue(who)
    assert client.post("/api/v1/labs/", {"name": "Robotics"}, format="json").status_code == 403
    patched = client.patch(f"/api/v1/labs/{vision_lab.pk}/", {"is_active": False}, format="json")
    assert patched.status_code == 403
    vision_lab.refresh_from_db()
    assert vision_lab.is_active and not Lab.objects.filter(name="Robotics").exists()


def test_site_admin_creates_renames_and_archives_a_lab_audited(as_carol, carol):
    made = as_carol.post("/api/v1/labs/", {"name": "Robotics Lab"}, format="json")
    assert made.status_code == 201, made.content
    lab = Lab.objects.get(pk=made.json()["id"])
    assert lab.slug == "robotics-lab" and lab.is_active
    renamed = as_carol.patch(f"/api/v1/labs/{lab.pk}/", {"name": "Robotics"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["name"] == "Robotics"
    archived = as_carol.patch(f"/api/v1/labs/{lab.pk}/", {"is_active": False}, format="json")
    assert archived.json()["is_active"] is False
    lab.refresh_from_db()
    assert lab.name == "Robotics" and not lab.is_active
    assert list(
        AuditEvent.objects.filter(actor=carol, target_id=str(lab.pk))
        .values_list("action", flat=True)
        .order_by("id")
    ) == ["lab.create", "lab.update", "lab.archive"]


def test_site_admin_sees_every_lab(as_carol, vision_lab, other_lab):
    names = {lab["name"] for lab in as_carol.get("/api/v1/labs/").json()["results"]}
    assert {vision_lab.name, other_lab.name} <= names


@pytest.mark.parametrize(
    ("body", "field"),
    [({"name": ""}, "name"), ({"name": "x", "slug": "not a slug"}, "slug"), ({}, "name")],
)
def test_bad_lab_input_is_a_400_naming_the_field(as_carol, body, field):
    response = as_carol.post("/api/v1/labs/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["extra"]["fields"]


def test_a_duplicate_lab_name_is_a_400_on_the_name(as_carol, vision_lab, other_lab):
    response = as_carol.post("/api/v1/labs/", {"name": vision_lab.name.upper()}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "duplicate_lab"
    assert "name" in response.json()["extra"]["fields"]
    renamed = as_carol.patch(
        f"/api/v1/labs/{other_lab.pk}/", {"name": vision_lab.name}, format="json"
    )
    assert renamed.status_code == 400 and "name" in renamed.json()["extra"]["fields"]


def test_site_admin_makes_a_member_lab_admin(as_carol, alice, vision_lab):
    membership = Membership.objects.get(user=alice, lab=vision_lab)
    response = as_carol.patch(
        f"/api/v1/labs/{vision_lab.pk}/members/{membership.pk}/",
        {"role": "lab_admin"},
        format="json",
    )
    assert response.status_code == 200
    membership.refresh_from_db()
    assert membership.role == Membership.Role.LAB_ADMIN
    assert AuditEvent.objects.filter(action="membership.update", target_id=str(membership.pk))


def test_an_archived_lab_books_nothing_new(as_alice, as_carol, vision_lab, pool, quotas, tomorrow):
    as_carol.patch(f"/api/v1/labs/{vision_lab.pk}/", {"is_active": False}, format="json")
    response = as_alice.post(
        "/api/v1/bookings/",
        {
            "pool": pool.pk,
            "start": tomorrow.isoformat(),
            "end": (tomorrow + timedelta(hours=1)).isoformat(),
        },
        format="json",
    )
    assert response.status_code == 403 and response.json()["code"] == "lab_archived"
    assert "lab" in response.json()["extra"]["fields"]


def test_a_lab_named_in_chinese_or_like_another_gets_a_free_short_name(as_carol, vision_lab):
    chinese = as_carol.post("/api/v1/labs/", {"name": "视觉计算组"}, format="json")
    assert chinese.status_code == 201, chinese.content
    assert chinese.json()["slug"] == "lab-2"
    twin = as_carol.post("/api/v1/labs/", {"name": f"{vision_lab.slug}!"}, format="json")
    assert twin.status_code == 201, twin.content
    assert twin.json()["slug"] == f"{vision_lab.slug}-2"
    assert Lab.objects.filter(slug__in=["lab-2", f"{vision_lab.slug}-2"]).count() == 2

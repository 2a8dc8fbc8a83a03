"""The volumes API: who sees which volume, its cost, and deletes refused while in use."""

from decimal import Decimal

import pytest

from conftest import client_for
from labgpu.catalog.tests.factories import ProviderAccountFactory
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Volume
from labgpu.provisioning.tests.factories import NodeFactory
from labgpu.usage.models import StorageUsage

pytestmark = pytest.mark.django_db


def make_volume(owner, name: str, **extra) -> Volume:
    return Volume.objects.create(
        owner_user=owner,
        provider_account=ProviderAccountFactory(),
        region="tor1",
        name=name,
        size_gb=100,
        state="available",
        **extra,
    )


def test_users_see_their_own_volumes_with_cost_and_site_admins_see_all(
    alice, bob, carol, vision_lab
):
    mine = make_volume(alice, "labgpu-u1-tor1", used_gb=Decimal("12.5"))
    make_volume(bob, "labgpu-u2-tor1")
    start = now()
    StorageUsage.objects.create(
        volume=mine,
        lab=vision_lab,
        user=alice,
        region="tor1",
        size_gb=100,
        started_at=start,
        ended_at=start.replace(year=start.year + 1),
        gb_months=Decimal("10"),
        cost=Decimal("1.004"),
    )

    seen = client_for(alice).get("/api/v1/volumes/").json()
    everyone = client_for(carol).get("/api/v1/volumes/").json()

    assert [(v["name"], v["cost"], v["used_gb"], v["in_use"]) for v in seen] == [
        ("labgpu-u1-tor1", "1.00", "12.50", False)
    ]
    assert {v["name"] for v in everyone} == {"labgpu-u1-tor1", "labgpu-u2-tor1"}


def test_a_volume_in_use_is_not_deleted_and_a_free_one_is(alice, bob, vision_lab):
    node = NodeFactory(booking__user=alice, booking__lab=vision_lab)
    busy = make_volume(alice, "labgpu-u1-tor1", attached_node=node)
    busy.state = "attached"
    busy.save(update_fields=["state"])
    free = make_volume(alice, "labgpu-u1-atl1")

    refused = client_for(alice).delete(f"/api/v1/volumes/{busy.pk}/")
    not_theirs = client_for(bob).delete(f"/api/v1/volumes/{free.pk}/")
    deleted = client_for(alice).delete(f"/api/v1/volumes/{free.pk}/")

    assert refused.status_code == 409 and refused.json()["code"] == "volume_in_use"
    assert not_theirs.status_code == 404
    assert deleted.status_code == 204
    assert Volume.objects.get(pk=free.pk).state == "deleted"
    assert Volume.objects.get(pk=busy.pk).state == "attached"
    assert [v["name"] for v in client_for(alice).get("/api/v1/volumes/").json()] == [
        "labgpu-u1-tor1"
    ]


def test_lab_admins_set_the_size_of_new_volumes_within_the_site_limit(
    alice, bob, vision_lab, settings
):
    settings.LABGPU_VOLUME_MAX_GB = 500
    url = f"/api/v1/volumes/lab-size/{vision_lab.pk}/"

    too_big = client_for(bob).put(url, {"size_gb": 800}, format="json")
    researcher = client_for(alice).put(url, {"size_gb": 200}, format="json")
    set_ = client_for(bob).put(url, {"size_gb": 200}, format="json")

    assert too_big.status_code == 400 and too_big.json()["extra"]["fields"]["size_gb"]
    assert researcher.status_code == 404
    assert set_.status_code == 200
    assert set_.json() == {"size_gb": 200, "limit_gb": 500, "default_gb": 100}


def test_site_admins_see_untracked_volumes_and_others_do_not(alice, carol):
    from labgpu.provisioning.models import UntrackedVolume

    UntrackedVolume.objects.create(
        provider_account=ProviderAccountFactory(),
        provider_id="0b5c4a7e-0000-4000-8000-000000000001",
        name="labgpu-u999-tor1",
        region="tor1",
        size_gb=30,
        last_seen_at=now(),
    )

    assert client_for(alice).get("/api/v1/volumes/untracked/").status_code == 403
    listed = client_for(carol).get("/api/v1/volumes/untracked/").json()
    assert [v["name"] for v in listed] == ["labgpu-u999-tor1"]


def test_storage_cost_is_reported_per_lab_beside_gpu_usage_prorated_to_the_range(
    alice, carol, mallory, vision_lab
):
    from datetime import timedelta

    volume = make_volume(alice, "labgpu-u1-tor1")
    start = now().replace(microsecond=0)
    StorageUsage.objects.create(
        volume=volume,
        lab=vision_lab,
        user=alice,
        region="tor1",
        size_gb=100,
        started_at=start,
        ended_at=start + timedelta(hours=146),
        gb_months=Decimal("20"),
        cost=Decimal("2.00"),
    )
    half = {
        "start": start.isoformat(),
        "end": (start + timedelta(hours=73)).isoformat(),
    }

    mine = client_for(alice).get("/api/v1/usage/storage/", half).json()
    others = client_for(mallory).get("/api/v1/usage/storage/", half).json()
    bad = client_for(carol).get(
        "/api/v1/usage/storage/", {"start": half["end"], "end": half["start"]}
    )

    assert mine == [
        {"lab": vision_lab.pk, "lab_name": vision_lab.name, "gb_months": "10.00", "cost": "1.00"}
    ]
    assert others == []
    assert bad.status_code == 400 and "end" in bad.json()["extra"]["fields"]

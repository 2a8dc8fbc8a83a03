"""A researcher creates, grows and deletes a volume through the API; a worker carries each step out
at the provider through the production DigitalOcean driver against the emulator (every exchange
validated against DigitalOcean's contract). The emulator's own ledger (its volumes, their sizes
over time, their actions) is the independent record; storage metering is checked against it."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from conftest import client_for
from emulator.contract import ExchangeRecorder, validation_on
from emulator.testing import start_emulator
from labgpu.audit.models import AuditEvent
from labgpu.catalog.models import ProviderAccount
from labgpu.catalog.tests.factories import InstanceTypeFactory, NodePoolFactory
from labgpu.core.models import OutboxMessage
from labgpu.providers.digitalocean import DigitalOceanDriver
from labgpu.provisioning.models import Volume
from labgpu.provisioning.services import volume_changes, volumes
from labgpu.provisioning.services.volumes import volumes_meter
from labgpu.provisioning.tests.factories import NodeFactory
from labgpu.usage.models import StorageUsage

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture
def emu(tmp_path):
    handle = start_emulator(tmp_path / "emulator", agent_cmd="", volume_action_s=0.1)
    yield handle
    handle.close()


@pytest.fixture
def drivers(emu, request, monkeypatch):
    """Every driver the services open is the production driver on the emulator, recorded."""
    validate = validation_on(request.node)
    recorder = ExchangeRecorder()
    made: list[DigitalOceanDriver] = []

    def driver_for(account):
        drv = DigitalOceanDriver(
            base_url=account.api_base_url,
            token="t",
            event_hooks=recorder.hooks,
            backoff_base_s=0.01,
        )
        made.append(drv)
        return drv

    monkeypatch.setattr(volume_changes, "driver_for", driver_for)
    monkeypatch.setattr(volumes, "driver_for", driver_for)
    yield made
    if validate:
        recorder.assert_valid()


@pytest.fixture
def pool(emu, vision_lab):
    account = ProviderAccount.objects.create(
        name="Emulator",
        kind="emulator",
        api_base_url=emu.url,
        token_env_var="LABGPU_PROVIDER_TOKEN_EMULATOR",
    )
    return NodePoolFactory(
        instance_type=InstanceTypeFactory(provider_account=account),
        region="tor1",
        fallback_regions=["atl1"],
        volume_scope="user",
        max_volume_gb=500,
    )


def emu_volume(emu, name):
    matches = [v for v in emu.volume_ledger() if v["name"] == name]
    assert len(matches) == 1, matches
    return matches[0]


def at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def create(alice, pool, drivers, size_gb=100, **extra):
    answer = client_for(alice).post(
        "/api/v1/volumes/", {"pool": pool.pk, "size_gb": size_gb, **extra}, format="json"
    )
    assert answer.status_code == 201, answer.json()
    volume_changes.volume_provision(volume_id=answer.json()["id"])
    return Volume.objects.get(pk=answer.json()["id"])


def test_a_researcher_creates_a_volume_and_a_worker_makes_it_once_at_the_provider(
    alice, pool, emu, drivers
):
    answer = client_for(alice).post(
        "/api/v1/volumes/", {"pool": pool.pk, "size_gb": 120, "region": "atl1"}, format="json"
    )

    assert answer.status_code == 201
    body = answer.json()
    assert (body["state"], body["region"], body["size_gb"], body["limit_gb"]) == (
        "creating",
        "atl1",
        120,
        500,
    )
    assert OutboxMessage.objects.filter(
        task="labgpu.provisioning.tasks.create_volume", args=[body["id"]]
    ).exists()
    assert AuditEvent.objects.filter(action="volume.created", actor=alice).count() == 1
    volume_changes.volume_provision(volume_id=body["id"])
    volume_changes.volume_provision(volume_id=body["id"])  # a redelivered task

    row = Volume.objects.get(pk=body["id"])
    remote = emu_volume(emu, row.name)
    assert (row.state, row.provider_id) == ("available", remote["id"])
    assert (remote["region"], remote["sizes"][-1][1], remote["deleted_at"]) == ("atl1", 120, None)
    assert len(emu.volumes()) == 1


def test_create_refusals_name_the_field_and_write_nothing(alice, pool, emu, drivers, vision_lab):
    client = client_for(alice)
    no_volumes = NodePoolFactory(instance_type=pool.instance_type, volume_scope="none")
    lab_pool = NodePoolFactory(instance_type=pool.instance_type, volume_scope="lab")

    def refused(body):
        answer = client.post("/api/v1/volumes/", body, format="json")
        return answer.status_code, answer.json()["code"], list(answer.json()["extra"]["fields"])

    assert refused({"pool": no_volumes.pk, "size_gb": 10}) == (
        400,
        "pool_has_no_volumes",
        ["pool"],
    )
    assert refused({"pool": pool.pk, "size_gb": 10, "region": "ams3"}) == (
        400,
        "volume_region_not_in_pool",
        ["region"],
    )
    assert refused({"pool": pool.pk, "size_gb": 501}) == (
        400,
        "volume_size_out_of_range",
        ["size_gb"],
    )
    assert refused({"pool": lab_pool.pk, "size_gb": 10}) == (400, "lab_required", ["lab"])
    assert refused({"pool": 999999, "size_gb": 10}) == (400, "not_found", ["pool"])
    assert Volume.objects.count() == 0

    create(alice, pool, drivers, size_gb=10)
    assert refused({"pool": pool.pk, "size_gb": 10}) == (409, "volume_exists", ["region"])
    lab_volume = client.post(
        "/api/v1/volumes/", {"pool": lab_pool.pk, "size_gb": 10, "lab": vision_lab.pk}
    )
    assert lab_volume.status_code == 201
    assert Volume.objects.get(pk=lab_volume.json()["id"]).owner_lab_id == vision_lab.pk
    assert len(emu.volumes()) == 1  # the refused ones never reached the provider


def test_growing_bills_the_old_size_until_the_provider_accepted_and_the_new_size_after(
    alice, pool, emu, drivers, settings
):
    settings.LABGPU_VOLUME_PRICE_GB_MONTH = "0.10"
    volume = create(alice, pool, drivers, size_gb=100)
    volumes_meter()

    answer = client_for(alice).post(
        f"/api/v1/volumes/{volume.pk}/resize/", {"size_gb": 250}, format="json"
    )
    assert answer.status_code == 200
    assert (answer.json()["size_gb"], answer.json()["resize_to_gb"]) == (100, 250)
    waiting = Volume.objects.get(pk=volume.pk)
    # while the grow waits for a worker, the meter stops at the request
    volumes_meter(until=waiting.resize_requested_at + timedelta(hours=5))
    assert max(StorageUsage.objects.values_list("ended_at", flat=True)) <= (
        waiting.resize_requested_at
    )

    volume_changes.volume_resize_apply(volume_id=volume.pk)
    volume_changes.volume_resize_apply(volume_id=volume.pk)  # a redelivered task
    later = datetime.now(UTC) + timedelta(hours=2)
    volumes_meter(until=later)

    sizes = emu_volume(emu, volume.name)["sizes"]
    assert [size for _, size in sizes] == [100, 250]  # the provider grew it once
    accepted = at(sizes[1][0])
    rows = list(StorageUsage.objects.filter(volume=volume).order_by("started_at"))
    old = [r for r in rows if r.size_gb == 100]
    new = [r for r in rows if r.size_gb == 250]
    # the provider's acceptance, to its precision (its actions state whole seconds)
    assert abs((old[-1].ended_at - accepted).total_seconds()) < 1
    assert new[0].started_at == old[-1].ended_at and new[-1].ended_at == later
    assert all(a.ended_at == b.started_at for a, b in itertools.pairwise(rows))
    hours = Decimal((later - new[0].started_at).total_seconds()) / 3600
    assert sum(r.gb_months for r in new) == pytest.approx(
        Decimal(250) * hours / 730, abs=Decimal("0.00001")
    )
    assert Volume.objects.get(pk=volume.pk).size_gb == 250
    assert AuditEvent.objects.filter(action="volume.resized").count() == 1


def test_a_grow_retried_after_the_provider_accepted_asks_once_and_bills_from_the_acceptance(
    alice, pool, emu, drivers
):
    volume = create(alice, pool, drivers, size_gb=100)
    client_for(alice).post(f"/api/v1/volumes/{volume.pk}/resize/", {"size_gb": 150})
    # a worker asked the provider and was killed before it recorded the answer
    volume.refresh_from_db()
    DigitalOceanDriver(base_url=emu.url, token="t").resize_volume(volume.provider_id, 150)

    volume_changes.volume_resize_apply(volume_id=volume.pk)

    sizes = emu_volume(emu, volume.name)["sizes"]
    assert [size for _, size in sizes] == [100, 150]
    first = StorageUsage.objects.filter(volume=volume).order_by("started_at").last()
    assert first.size_gb == 100
    assert abs((first.ended_at - at(sizes[1][0])).total_seconds()) < 1
    assert Volume.objects.get(pk=volume.pk).size_gb == 150


def test_grow_refusals_shrink_over_limit_pending_and_others_volumes(
    alice, bob, mallory, pool, emu, drivers
):
    volume = create(alice, pool, drivers, size_gb=100)
    url = f"/api/v1/volumes/{volume.pk}/resize/"
    client = client_for(alice)

    def refused(size, who=client):
        answer = who.post(url, {"size_gb": size}, format="json")
        data = answer.json()
        return answer.status_code, data["code"], list(data.get("extra", {}).get("fields", {}))

    assert refused(100) == (400, "volume_shrink", ["size_gb"])
    assert refused(50) == (400, "volume_shrink", ["size_gb"])
    assert refused(501) == (400, "volume_size_out_of_range", ["size_gb"])
    assert refused(200, client_for(mallory))[0] == 404
    assert refused(200, client_for(bob))[0] == 404  # alice's own volume: not her lab's
    assert client.post(url, {"size_gb": 200}).status_code == 200
    assert refused(300) == (409, "volume_resize_pending", [])
    assert [s for _, s in emu_volume(emu, volume.name)["sizes"]] == [100]  # no worker yet


def test_a_volume_attached_to_a_node_is_not_deleted_and_a_free_one_is_gone_at_the_provider(
    alice, pool, emu, drivers, vision_lab
):
    volume = create(alice, pool, drivers, size_gb=10)
    node = NodeFactory(booking__user=alice, booking__lab=vision_lab, booking__pool=pool)
    Volume.objects.filter(pk=volume.pk).update(state="attached", attached_node=node)
    client = client_for(alice)

    refused = client.delete(f"/api/v1/volumes/{volume.pk}/")
    assert (refused.status_code, refused.json()["code"]) == (409, "volume_in_use")
    assert emu_volume(emu, volume.name)["deleted_at"] is None

    Volume.objects.filter(pk=volume.pk).update(state="available", attached_node=None)
    node.delete()
    assert client.delete(f"/api/v1/volumes/{volume.pk}/").status_code == 204
    assert emu_volume(emu, volume.name)["deleted_at"] is not None
    assert Volume.objects.get(pk=volume.pk).state == "deleted"


def test_deleting_a_volume_whose_create_reached_the_provider_unrecorded_deletes_it_there(
    alice, pool, emu, drivers
):
    answer = client_for(alice).post("/api/v1/volumes/", {"pool": pool.pk, "size_gb": 10})
    row = Volume.objects.get(pk=answer.json()["id"])
    # a worker created it and was killed before recording the provider's id
    DigitalOceanDriver(base_url=emu.url, token="t").create_volume(
        volumes.VolumeSpec(name=row.name, region=row.region, size_gb=10)
    )

    assert client_for(alice).delete(f"/api/v1/volumes/{row.pk}/").status_code == 204

    assert emu_volume(emu, row.name)["deleted_at"] is not None
    volume_changes.volume_provision(volume_id=row.pk)  # the redelivered create does nothing
    assert emu.volumes() == []


def test_a_site_admin_sets_a_pools_volume_limit_audited_and_it_bounds_new_volumes(
    alice, carol, pool, emu, drivers
):
    admin = client_for(carol)
    url = f"/api/v1/pools/{pool.pk}/"

    too_big = admin.patch(url, {"max_volume_gb": 16 * 1024 + 1}, format="json")
    assert too_big.status_code == 400 and "max_volume_gb" in too_big.json()["extra"]["fields"]
    not_theirs = client_for(alice).patch(url, {"max_volume_gb": 5000}, format="json")
    assert not_theirs.status_code == 403
    saved = admin.patch(
        url, {"max_volume_gb": 40, "fallback_regions": ["atl1", "nyc2"]}, format="json"
    )
    assert saved.status_code == 200, saved.json()
    event = AuditEvent.objects.get(action="pool.update", actor=carol)
    assert event.data["changes"]["max_volume_gb"] == {"from": 500, "to": 40}

    over = client_for(alice).post("/api/v1/volumes/", {"pool": pool.pk, "size_gb": 41})
    assert (over.status_code, over.json()["code"]) == (400, "volume_size_out_of_range")
    volume = create(alice, pool, drivers, size_gb=40, region="nyc2")
    grow = client_for(alice).post(f"/api/v1/volumes/{volume.pk}/resize/", {"size_gb": 41})
    assert (grow.status_code, grow.json()["code"]) == (400, "volume_size_out_of_range")

"""Persistent volumes in the node lifecycle, against the emulator over real HTTP (every exchange
validated against DigitalOcean's contract). The emulator's own state is the independent record."""

from __future__ import annotations

import pytest

from emulator.contract import ExchangeRecorder, validation_on
from emulator.testing import start_emulator
from labgpu.core.errors import ApplicationError, Conflict
from labgpu.providers import DropletSpec
from labgpu.providers.digitalocean import DigitalOceanDriver
from labgpu.provisioning.models import LabVolumeSize, Node, Volume
from labgpu.provisioning.services.volumes import (
    VolumeBusy,
    VolumeDetachFailed,
    lab_volume_size_set,
    volume_delete,
    volume_ensure_for_node,
    volume_record_attached,
    volume_release,
    volume_size_for,
)
from labgpu.provisioning.tests.factories import NodeFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture
def emu(tmp_path):
    handle = start_emulator(tmp_path / "emulator", agent_cmd="", volume_action_s=0.1)
    yield handle
    handle.close()


@pytest.fixture
def driver(emu, request):
    validate = validation_on(request.node)  # no spec: runs, validation off, said at the end
    recorder = ExchangeRecorder()
    drv = DigitalOceanDriver(
        base_url=emu.url, token="t", event_hooks=recorder.hooks, backoff_base_s=0.01
    )
    drv.emu = emu  # type: ignore[attr-defined]  # the helpers below finish boots through it
    yield drv
    drv.close()
    if validate:
        recorder.assert_valid()


@pytest.fixture
def node(alice, vision_lab):
    made = NodeFactory(booking__user=alice, booking__lab=vision_lab, region="tor1")
    made.booking.pool.volume_scope = "user"
    made.booking.pool.save(update_fields=["volume_scope"])
    return made


def create_droplet(driver, node, volume):
    emu = driver.emu
    spec = DropletSpec(
        node_id=node.pk,
        region=node.region,
        size=node.size,
        image=node.image,
        volume_ids=(volume.provider_id,),
    )
    droplet = driver.create(spec)
    emu.activate(droplet.id)
    return droplet


def record(node, droplet):
    Node.objects.filter(pk=node.pk).update(provider_id=str(droplet.id))
    node.refresh_from_db()
    volume_record_attached(node=node)


def test_one_volume_per_owner_and_region_sized_by_the_lab_setting(driver, emu, node, settings):
    settings.LABGPU_VOLUME_MAX_GB = 50
    LabVolumeSize.objects.create(lab=node.booking.lab, size_gb=40)

    first = volume_ensure_for_node(node=node, driver=driver)
    again = volume_ensure_for_node(node=node, driver=driver)

    assert first.pk == again.pk
    remote = emu.volumes()
    assert [(v["name"], v["region"]["slug"], v["size_gigabytes"]) for v in remote] == [
        (f"labgpu-u{node.booking.user_id}-tor1", "tor1", 40)
    ]
    assert remote[0]["id"] == first.provider_id


def test_the_lab_admins_size_stays_within_the_site_limit(node, settings):
    settings.LABGPU_VOLUME_MAX_GB = 200
    with pytest.raises(ApplicationError) as refused:
        lab_volume_size_set(lab=node.booking.lab, size_gb=500)
    assert refused.value.extra["fields"]["size_gb"]
    lab_volume_size_set(lab=node.booking.lab, size_gb=150)
    settings.LABGPU_VOLUME_MAX_GB = 100  # the site admin lowered the limit later
    assert volume_size_for(node.booking.lab) == 100


def test_pools_without_a_volume_scope_get_no_volume(driver, emu, node):
    node.booking.pool.volume_scope = "none"
    node.booking.pool.save(update_fields=["volume_scope"])

    assert volume_ensure_for_node(node=node, driver=driver) is None
    assert emu.volumes() == []


def test_worker_killed_between_attach_and_record_adopts_the_attachment(driver, emu, node):
    volume = volume_ensure_for_node(node=node, driver=driver)
    droplet = create_droplet(driver, node, volume)  # attached by the create; then the worker dies

    # the retried provision: the volume is held by this node's own droplet, which is fine
    again = volume_ensure_for_node(node=node, driver=driver)
    record(node, droplet)

    assert again.pk == volume.pk
    volume.refresh_from_db()
    assert volume.state == "attached" and volume.attached_node_id == node.pk
    assert emu.volumes()[0]["droplet_ids"] == [droplet.id]


def test_a_volume_still_on_another_nodes_droplet_makes_the_next_node_wait(driver, emu, node):
    volume = volume_ensure_for_node(node=node, driver=driver)
    record(node, create_droplet(driver, node, volume))
    later = NodeFactory(
        booking__user=node.booking.user,
        booking__lab=node.booking.lab,
        booking__pool=node.booking.pool,
        booking__slot=1,
    )

    with pytest.raises(VolumeBusy):
        volume_ensure_for_node(node=later, driver=driver)


def test_teardown_detaches_and_confirms_and_a_kill_before_destroy_is_harmless(driver, emu, node):
    volume = volume_ensure_for_node(node=node, driver=driver)
    droplet = create_droplet(driver, node, volume)
    record(node, droplet)

    volume_release(node=node, driver=driver, droplet_id=droplet.id)
    # killed here, before the destroy: the retried teardown releases again, with nothing to do
    volume_release(node=node, driver=driver, droplet_id=droplet.id)

    assert emu.volumes()[0]["droplet_ids"] == []
    # shut down first, so the node's labgpu-data unit synced and unmounted /data
    assert driver.get(droplet.id).status == "off"
    volume.refresh_from_db()
    assert volume.state == "available" and volume.attached_node_id is None
    assert volume.last_attached_node_id == node.pk
    assert [d["id"] for d in emu.droplets()] == [droplet.id]  # release never destroys


def test_a_failing_detach_keeps_the_volume_attached_and_is_retried(driver, emu, node):
    volume = volume_ensure_for_node(node=node, driver=driver)
    droplet = create_droplet(driver, node, volume)
    record(node, droplet)
    emu.set_faults(volume_action_errors=["detach"])

    with pytest.raises(VolumeDetachFailed):
        volume_release(node=node, driver=driver, droplet_id=droplet.id)

    assert emu.volumes()[0]["droplet_ids"] == [droplet.id]
    emu.set_faults(volume_action_errors=[])
    volume_release(node=node, driver=driver, droplet_id=droplet.id)
    assert emu.volumes()[0]["droplet_ids"] == []


def test_a_volume_in_another_region_than_the_pool_is_left_alone(driver, emu, node):
    elsewhere = emu.seed_volume(f"labgpu-u{node.booking.user_id}-nyc3", "nyc3", 10)

    volume = volume_ensure_for_node(node=node, driver=driver)
    create_droplet(driver, node, volume)

    by_id = {v["id"]: v for v in emu.volumes()}
    assert by_id[elsewhere["id"]]["droplet_ids"] == []
    assert by_id[volume.provider_id]["region"]["slug"] == "tor1"


def test_a_volume_is_never_deleted_while_a_booking_uses_it(driver, emu, node):
    volume = volume_ensure_for_node(node=node, driver=driver)
    droplet = create_droplet(driver, node, volume)
    record(node, droplet)

    with pytest.raises(Conflict):
        volume_delete(volume=volume, driver=driver)
    assert len(emu.volumes()) == 1

    volume_release(node=node, driver=driver, droplet_id=droplet.id)
    Node.objects.filter(pk=node.pk).update(status="destroyed")
    volume_delete(volume=volume, driver=driver)
    assert emu.volumes() == []
    assert Volume.objects.get(pk=volume.pk).state == "deleted"


def test_untracked_tagged_volumes_are_reported_to_site_admins_and_never_deleted(driver, emu, node):
    from labgpu.audit.models import AuditEvent
    from labgpu.provisioning.models import UntrackedVolume
    from labgpu.provisioning.services.volumes import volumes_reconcile

    ours = volume_ensure_for_node(node=node, driver=driver)
    stray = emu.seed_volume("labgpu-u999-tor1", "tor1", 30, tags=["labgpu-volume"])
    emu.seed_volume("not-ours", "tor1", 5)  # no tag: someone else's business
    account = node.provider_account

    assert volumes_reconcile(account=account, driver=driver) == 1
    assert volumes_reconcile(account=account, driver=driver) == 1  # reported once, kept listed

    reported = UntrackedVolume.objects.get()
    assert (reported.provider_id, reported.size_gb, reported.resolved_at) == (stray["id"], 30, None)
    assert AuditEvent.objects.filter(action="volume.untracked").count() == 1
    assert {v["id"] for v in emu.volumes()} >= {stray["id"], ours.provider_id}  # nothing deleted

    driver.delete_volume(stray["id"])  # a site admin cleaned it up at the provider
    assert volumes_reconcile(account=account, driver=driver) == 0
    reported.refresh_from_db()
    assert reported.resolved_at is not None


def test_storage_is_metered_in_gb_months_once_and_charged_to_the_lab(driver, emu, node, settings):
    from datetime import timedelta
    from decimal import Decimal

    from labgpu.provisioning.services.volumes import volume_storage_cost, volumes_meter
    from labgpu.usage.models import StorageUsage

    settings.LABGPU_VOLUME_PRICE_GB_MONTH = "0.10"
    volume = volume_ensure_for_node(node=node, driver=driver)
    record(node, create_droplet(driver, node, volume))
    volume.refresh_from_db()
    created = volume.created_at

    assert volumes_meter(until=created + timedelta(hours=73)) == 1
    assert volumes_meter(until=created + timedelta(hours=73)) == 0  # metered once
    assert volumes_meter(until=created + timedelta(hours=146)) == 1  # continues where it ended

    rows = list(StorageUsage.objects.order_by("started_at"))
    assert [r.started_at for r in rows] == [created, created + timedelta(hours=73)]
    assert all(r.lab_id == node.booking.lab_id and r.user_id == node.booking.user_id for r in rows)
    # 100 GB for 146 hours = 100 × 146/730 = 20 GB-months = $2.00 at $0.10
    assert sum(r.gb_months for r in rows) == Decimal("20")
    assert volume_storage_cost(volume) == Decimal("2.00")

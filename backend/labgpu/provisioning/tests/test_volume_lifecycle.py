"""Persistent volumes through the real lifecycle: Celery workers, the emulator over HTTP, the
fixture agent. The emulator's state is the independent record: one volume per owner and region,
attached to the node's droplet while it runs, detached (never deleted) before it is destroyed,
and the same volume again on the next booking. Workers are killed at the volume's crash points."""

import pytest

from labgpu.provisioning.models import Node, Volume
from labgpu.provisioning.tests.harness import wait_for
from labgpu.provisioning.tests.test_crash_anywhere import VOLUME_POINTS, crashed_at
from labgpu.provisioning.tests.test_lifecycle import (
    assert_no_orphans,
    create_booking,
    end_early,
    wait_status,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def volume_pool(lifecycle):
    lifecycle.pool.volume_scope = "user"
    lifecycle.pool.save(update_fields=["volume_scope"])
    return lifecycle


def run_booking(world, alice) -> Node:
    booking_id = create_booking(alice, world.pool)
    wait_status(world, booking_id, "ready", timeout_s=120)
    node = Node.objects.get(booking_id=booking_id, status="ready")
    volumes = world.emulator.volumes()
    assert len(volumes) == 1, volumes
    assert volumes[0]["droplet_ids"] == [int(node.provider_id)]
    end_early(alice, booking_id)
    wait_status(world, booking_id, "completed", timeout_s=120)
    assert_no_orphans(world)
    return node


def assert_volume_kept_and_free(world, alice) -> dict:
    volumes = world.emulator.volumes()
    assert len(volumes) == 1, volumes
    assert volumes[0]["droplet_ids"] == []
    assert volumes[0]["name"] == f"labgpu-u{alice.pk}-{world.pool.region}"
    row = Volume.objects.get()
    assert row.provider_id == volumes[0]["id"]
    assert row.state == "available" and row.attached_node_id is None
    return volumes[0]


def test_the_users_volume_follows_them_from_booking_to_booking(volume_pool, alice):
    volume_pool.start_worker()

    first = run_booking(volume_pool, alice)
    kept = assert_volume_kept_and_free(volume_pool, alice)
    second = run_booking(volume_pool, alice)

    assert assert_volume_kept_and_free(volume_pool, alice)["id"] == kept["id"]
    assert Volume.objects.get().last_attached_node_id == second.pk != first.pk
    assert all(e["deleted_at"] is None for e in volume_pool.emulator.volume_ledger())


def test_the_nodes_agent_reports_how_full_its_data_volume_is(volume_pool, alice):
    """The real fixture agent, told the attached volume's size by the emulator, reports /data in
    its heartbeats; the volume row gets used space (never above its size) and when."""
    volume_pool.start_worker()
    booking_id = create_booking(alice, volume_pool.pool)
    wait_status(volume_pool, booking_id, "ready", timeout_s=120)

    volume = wait_for(
        lambda: Volume.objects.filter(used_gb__isnull=False).first(),
        timeout_s=30,
        message="used space reported",
    )

    (remote,) = volume_pool.emulator.volumes()
    assert 0 < volume.used_gb <= remote["size_gigabytes"] == volume.size_gb
    assert volume.used_at is not None
    end_early(alice, booking_id)
    wait_status(volume_pool, booking_id, "completed", timeout_s=120)


# Every volume point the code has (test_crash_anywhere.py finds them by scanning the source),
# and the droplet created with the volume attached but not yet recorded.
@pytest.mark.parametrize("point", [*VOLUME_POINTS, "provision.after_create_post"])
def test_a_worker_killed_at_a_volume_step_leaves_one_volume_detached(
    volume_pool, alice, tmp_path, point
):
    marker = tmp_path / "crashed"
    crashing = volume_pool.start_worker(LABGPU_CRASH_AT=point, LABGPU_CRASH_MARKER=str(marker))
    booking_id = create_booking(alice, volume_pool.pool)
    if point.startswith("teardown"):
        wait_status(volume_pool, booking_id, "ready", timeout_s=120)
        end_early(alice, booking_id)
    wait_for(
        lambda: crashed_at(marker, point) and crashing.process.poll() is not None,
        timeout_s=90,
        message=f"the worker to die at {point}",
    )
    crashing.killed = True
    volume_pool.start_worker()
    if not point.startswith("teardown"):
        wait_status(volume_pool, booking_id, "ready", timeout_s=120)
        end_early(alice, booking_id)
    wait_status(volume_pool, booking_id, "completed", timeout_s=120)
    assert_no_orphans(volume_pool)
    assert_volume_kept_and_free(volume_pool, alice)
    assert len(volume_pool.emulator.ledger()) == 1  # a crash never costs a second droplet


def test_a_detach_that_fails_keeps_the_droplet_until_it_succeeds(volume_pool, alice):
    volume_pool.start_worker()
    booking_id = create_booking(alice, volume_pool.pool)
    wait_status(volume_pool, booking_id, "ready", timeout_s=120)
    volume_pool.emulator.set_faults(volume_action_errors=["detach"])
    end_early(alice, booking_id)

    wait_for(
        lambda: Node.objects.filter(booking_id=booking_id, teardown_attempts__gte=2).exists(),
        timeout_s=90,
        message="teardown to retry the failed detach",
    )
    droplets = volume_pool.emulator.droplets()
    assert len(droplets) == 1 and droplets[0]["gone_at"] is None  # not destroyed with the volume
    assert volume_pool.emulator.volumes()[0]["droplet_ids"] == [droplets[0]["id"]]

    volume_pool.emulator.set_faults(volume_action_errors=[])
    wait_status(volume_pool, booking_id, "completed", timeout_s=120)
    assert_no_orphans(volume_pool)
    assert_volume_kept_and_free(volume_pool, alice)

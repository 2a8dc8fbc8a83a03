"""The driver's volume methods over real HTTP against the emulator; every exchange is validated
against DigitalOcean's contract by `make_driver`'s recorder."""

from __future__ import annotations

import time

import pytest

from labgpu.providers import (
    VOLUME_TAG,
    DropletSpec,
    ProviderPermanentError,
    VolumeSpec,
    volume_name,
)
from labgpu.providers.fake import FakeDriver

pytestmark = pytest.mark.slow  # a live emulator subprocess (see pyproject markers)


def vspec(owner_id: int = 1, region: str = "tor1", size_gb: int = 10) -> VolumeSpec:
    return VolumeSpec(
        name=volume_name(owner_kind="user", owner_id=owner_id, region=region),
        region=region,
        size_gb=size_gb,
    )


def droplet_spec(node_id: int, **extra) -> DropletSpec:
    return DropletSpec(
        node_id=node_id, region="tor1", size="gpu-mi300x1-192gb", image="gpu-amd-base", **extra
    )


def wait_done(driver, action):
    deadline = time.monotonic() + 5
    while action.status == "in-progress":
        assert time.monotonic() < deadline, "volume action did not finish"
        time.sleep(0.05)
        action = driver.volume_action(action.volume_id, action.id)
    return action


def test_volume_names_are_deterministic_and_follow_digitaloceans_rule():
    assert volume_name(owner_kind="user", owner_id=12, region="tor1") == "labgpu-u12-tor1"
    assert volume_name(owner_kind="lab", owner_id=3, region="atl1") == "labgpu-l3-atl1"
    with pytest.raises(ValueError):
        volume_name(owner_kind="user", owner_id=0, region="tor1")


def test_create_volume_is_idempotent_by_name_and_region(make_driver, emulator):
    driver = make_driver()

    first = driver.create_volume(vspec())
    again = driver.create_volume(vspec(size_gb=99))

    assert again.id == first.id and again.size_gb == 10
    assert [v["name"] for v in emulator.volumes()] == ["labgpu-u1-tor1"]
    assert emulator.volumes()[0]["tags"] == [VOLUME_TAG]
    assert driver.find_volume("labgpu-u1-tor1", "tor1").id == first.id
    assert driver.find_volume("labgpu-u1-tor1", "nyc3") is None


def test_a_create_answered_500_after_making_the_volume_adopts_it_on_retry(make_driver, emulator):
    driver = make_driver()
    emulator.fail_next("POST", "/v2/volumes", 500, after_create=True)

    volume = driver.create_volume(vspec())

    assert [v["id"] for v in emulator.volumes()] == [volume.id]


def test_a_droplet_created_with_a_volume_has_it_attached(make_driver, emulator):
    driver = make_driver()
    volume = driver.create_volume(vspec())

    droplet = driver.create(droplet_spec(1, volume_ids=(volume.id,)))

    assert driver.get_volume(volume.id).droplet_ids == (droplet.id,)


def test_attach_and_detach_are_idempotent_and_confirmed_by_their_actions(make_driver, emulator):
    driver = make_driver()
    volume = driver.create_volume(vspec())
    droplet = driver.create(droplet_spec(1))

    attached = wait_done(driver, driver.attach_volume(volume.id, droplet.id))
    assert attached.status == "completed" and attached.type == "attach_volume"
    assert driver.attach_volume(volume.id, droplet.id) is None  # already there
    detached = wait_done(driver, driver.detach_volume(volume.id, droplet.id))
    assert detached.status == "completed"
    assert driver.detach_volume(volume.id, droplet.id) is None  # already off
    assert driver.get_volume(volume.id).droplet_ids == ()


def test_a_volume_is_never_attached_to_a_second_droplet(make_driver, emulator):
    driver = make_driver()
    volume = driver.create_volume(vspec())
    one, two = driver.create(droplet_spec(1)), driver.create(droplet_spec(2))
    driver.attach_volume(volume.id, one.id)

    with pytest.raises(ProviderPermanentError):
        driver.attach_volume(volume.id, two.id)
    assert driver.get_volume(volume.id).droplet_ids == (one.id,)


def test_a_volume_in_another_region_is_refused(make_driver, emulator):
    driver = make_driver()
    volume = driver.create_volume(vspec(region="nyc3"))
    droplet = driver.create(droplet_spec(1))

    with pytest.raises(ProviderPermanentError, match="region"):
        driver.attach_volume(volume.id, droplet.id)


def test_an_attached_volume_is_not_deleted_and_a_gone_one_counts_as_deleted(make_driver, emulator):
    driver = make_driver()
    volume = driver.create_volume(vspec())
    driver.create(droplet_spec(1, volume_ids=(volume.id,)))

    with pytest.raises(ProviderPermanentError):
        driver.delete_volume(volume.id)
    assert len(emulator.volumes()) == 1

    other = driver.create_volume(vspec(owner_id=2))
    driver.delete_volume(other.id)
    driver.delete_volume(other.id)  # already gone: fine
    assert [v["id"] for v in emulator.volumes()] == [volume.id]


def test_detach_after_the_droplet_is_gone_has_nothing_to_do(make_driver, emulator):
    driver = make_driver()
    volume = driver.create_volume(vspec())
    droplet = driver.create(droplet_spec(1, volume_ids=(volume.id,)))
    emulator.vanish(droplet.id)

    assert driver.detach_volume(volume.id, droplet.id) is None


def test_a_failing_detach_reports_errored_and_the_volume_stays_attached(make_driver, emulator):
    driver = make_driver()
    volume = driver.create_volume(vspec())
    droplet = driver.create(droplet_spec(1, volume_ids=(volume.id,)))
    emulator.set_faults(volume_action_errors=["detach"])

    action = wait_done(driver, driver.detach_volume(volume.id, droplet.id))

    assert action.status == "errored"
    assert driver.get_volume(volume.id).droplet_ids == (droplet.id,)


def test_resize_only_grows(make_driver, emulator):
    driver = make_driver()
    volume = driver.create_volume(vspec())

    wait_done(driver, driver.resize_volume(volume.id, 40))
    with pytest.raises(ProviderPermanentError, match="upwards"):
        driver.resize_volume(volume.id, 20)
    assert driver.get_volume(volume.id).size_gb == 40


def test_list_volumes_returns_ours_unless_asked_for_all(make_driver, emulator):
    driver = make_driver()
    emulator.configure(max_per_page=2)
    ours = [driver.create_volume(vspec(owner_id=n)) for n in (1, 2, 3)]
    emulator.seed_volume("someone-elses", "tor1")

    assert sorted(v.id for v in driver.list_volumes()) == sorted(v.id for v in ours)
    assert len(driver.list_volumes(tag=None)) == 4


def test_the_fake_keeps_the_same_volume_rules():
    fake = FakeDriver()
    volume = fake.create_volume(vspec())
    assert fake.create_volume(vspec()).id == volume.id
    droplet = fake.create(droplet_spec(1, volume_ids=(volume.id,)))
    other = fake.create(droplet_spec(2))

    with pytest.raises(ProviderPermanentError):
        fake.attach_volume(volume.id, other.id)
    with pytest.raises(ProviderPermanentError):
        fake.delete_volume(volume.id)
    fake.failing_volume_actions.add("detach")
    assert fake.detach_volume(volume.id, droplet.id).status == "errored"
    fake.failing_volume_actions.clear()
    assert fake.detach_volume(volume.id, droplet.id).status == "completed"
    fake.delete_volume(volume.id)
    assert fake.volumes == {}

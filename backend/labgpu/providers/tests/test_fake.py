"""The in-memory FakeDriver keeps the real driver's contract (so lifecycle tests can trust it)."""

from __future__ import annotations

import pytest

from labgpu.providers import (
    DropletSpec,
    ProviderAmbiguousCreate,
    ProviderDriver,
    ProviderNoCapacity,
    ProviderNotFound,
    ProviderPermanentError,
    ProviderTransientError,
    create_or_adopt,
)
from labgpu.providers.fake import FakeDriver

SPEC = DropletSpec(node_id=5, region="tor1", size="gpu-mi300x1-192gb", image="gpu-amd-base")


def test_fake_driver_implements_the_provider_interface():
    assert isinstance(FakeDriver(), ProviderDriver)


def test_fake_droplets_boot_after_the_configured_number_of_gets():
    fake = FakeDriver(boot_after_gets=2)
    droplet = fake.create(SPEC)

    assert droplet.status == "new" and droplet.name == "labgpu-node-5" and droplet.node_id == 5
    assert fake.get(droplet.id).status == "new"
    assert fake.get(droplet.id).status == "active"


def test_fake_ambiguous_create_that_made_the_droplet_is_adopted_on_retry():
    fake = FakeDriver()
    fake.fail_next_create(created=True)
    with pytest.raises(ProviderAmbiguousCreate):
        fake.create(SPEC)

    droplet, adopted = create_or_adopt(fake, SPEC)

    assert adopted and len(fake.droplets) == 1 and droplet.tags[0] == "labgpu-node-5"


def test_fake_ambiguous_create_that_made_nothing_creates_on_retry():
    fake = FakeDriver()
    fake.fail_next_create(created=False)
    with pytest.raises(ProviderAmbiguousCreate):
        fake.create(SPEC)

    _, adopted = create_or_adopt(fake, SPEC)

    assert not adopted and len(fake.droplets) == 1


def test_fake_errors_match_the_real_drivers():
    fake = FakeDriver()
    fake.no_capacity.add(SPEC.size)
    with pytest.raises(ProviderNoCapacity, match="not available in this region") as excinfo:
        fake.create(SPEC)
    assert isinstance(excinfo.value, ProviderPermanentError)
    assert (excinfo.value.region, excinfo.value.size) == (SPEC.region, SPEC.size)
    with pytest.raises(ProviderNotFound):
        fake.get(1)
    fake.destroy(1)  # already gone = success
    fake.fail_next_calls(1)
    with pytest.raises(ProviderTransientError):
        fake.list_ours()
    assert fake.list_ours() == []

"""The provider lease: one worker at a time talks to the provider about a node (I-4)."""

from datetime import timedelta

import pytest

from labgpu.bookings.models import Booking
from labgpu.catalog.models import ProviderAccount
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.services import LeaseLost, _node_lease, _renew_lease

pytestmark = pytest.mark.django_db


@pytest.fixture
def node(alice, vision_lab, pool, tomorrow):
    booking = Booking.objects.create(
        lab=vision_lab,
        user=alice,
        pool=pool,
        start=tomorrow,
        end=tomorrow + timedelta(hours=1),
        reserved_start=tomorrow,
        reserved_end=tomorrow + timedelta(hours=1),
        slot=0,
        status="provisioning",
        gpu_count=1,
        price_per_hour=1,
    )
    account = ProviderAccount.objects.create(name="E", kind="emulator", token_env_var="X")
    return Node.objects.create(
        booking=booking,
        provider_account=account,
        region="tor1",
        size="s",
        image="i",
        status="creating",
    )


def test_only_one_holder_of_a_node_lease(node):
    with _node_lease(node.pk) as first, _node_lease(node.pk) as second:
        assert first and not second
    with _node_lease(node.pk) as after_release:
        assert after_release


def test_an_expired_lease_can_be_taken_and_the_old_holder_may_not_create(node):
    with _node_lease(node.pk) as mine:
        assert mine
        renew = _renew_lease(node.pk)
        renew()  # still ours: extended
        Node.objects.filter(pk=node.pk).update(lease_until=now() - timedelta(seconds=1))
        with _node_lease(node.pk) as thief:
            assert thief
            with pytest.raises(LeaseLost):
                renew()

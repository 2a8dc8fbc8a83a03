"""The provider lease and the create step: one worker at a time talks to the provider about a
node, and what it creates is recorded, never lost or doubled (I-4)."""

from datetime import timedelta

import pytest

from labgpu.bookings.tests.factories import BookingFactory
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.services.nodes import LeaseLost, _node_lease, _renew_lease
from labgpu.provisioning.tests.factories import NodeFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def node(alice, vision_lab, pool, tomorrow):
    booking = BookingFactory(
        lab=vision_lab, user=alice, pool=pool, start=tomorrow, status="provisioning"
    )
    return NodeFactory(booking=booking, status="creating")


def test_only_one_holder_of_a_node_lease(node):
    with _node_lease(node.pk) as first, _node_lease(node.pk) as second:
        assert first and not second
    with _node_lease(node.pk) as after_release:
        assert after_release


def test_I4_an_expired_lease_can_be_taken_and_the_old_holder_may_not_create(node):
    with _node_lease(node.pk) as mine:
        assert mine
        renew = _renew_lease(node.pk)
        renew()  # still ours: extended
        Node.objects.filter(pk=node.pk).update(lease_until=now() - timedelta(seconds=1))
        with _node_lease(node.pk) as thief:
            assert thief
            with pytest.raises(LeaseLost):
                renew()


def test_an_adopted_droplet_whose_agent_checked_in_first_is_kept(node, monkeypatch):
    """A create answered 5xx but booted; its agent checked in (CREATING → CHECKING) before the
    retry adopted the droplet. The retry must record it, not tear the live node down."""
    from contextlib import nullcontext

    from labgpu.core.transitions import transition
    from labgpu.providers import Droplet
    from labgpu.provisioning.services import nodes

    droplet = Droplet(
        id=42, name="labgpu-node", status="active", size_slug="s", region="tor1", image="i",
        tags=(), public_ipv4="192.0.2.7", private_ipv4=None, created_at=now(),
    )  # fmt: skip

    def adopt_after_the_agent_checked_in(driver, spec, *, before_create):
        transition(Node, pk=node.pk, from_statuses=["creating"], to_status="checking")
        return droplet, True

    def no_teardown(**kwargs):
        raise AssertionError("a live node was torn down")

    monkeypatch.setattr(nodes, "driver_for", lambda account: nullcontext(None))
    monkeypatch.setattr(nodes, "create_or_adopt", adopt_after_the_agent_checked_in)
    monkeypatch.setattr(nodes, "_node_teardown", no_teardown)
    nodes.node_provision(node_id=node.pk)
    node.refresh_from_db()
    assert (node.status, node.provider_id, node.public_ip) == ("checking", "42", "192.0.2.7")

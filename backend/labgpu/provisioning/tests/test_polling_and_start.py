"""Booting nodes are polled in bulk, and a booking due now starts without the sweep."""

import pytest

from conftest import client_for
from labgpu.bookings.models import Booking
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.services.nodes import nodes_poll
from labgpu.provisioning.tests.conftest import on_demand_body
from labgpu.provisioning.tests.harness import wait_for
from labgpu.provisioning.tests.ledger import our_ledger

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def provider_requests(emulator) -> int:
    return emulator.state()["counters"]["requests"]


def test_polling_200_booting_nodes_costs_one_listing_not_200_gets(lifecycle, vision_lab, alice):
    """One `type=gpus` listing per account per cycle (the 200 fit one page of 200)."""
    lifecycle.pool.capacity = 200
    lifecycle.pool.save(update_fields=["capacity"])
    nodes = []
    for slot in range(200):
        node = Node.objects.create(
            booking=BookingFactory(lab=vision_lab, user=alice, pool=lifecycle.pool, slot=slot),
            provider_account=lifecycle.account,
            region="tor1",
            size="gpu-mi300x1-192gb",
            image="gpu-amd-base",
            status="creating",
            status_changed_at=now(),
        )
        (droplet_id,) = lifecycle.emulator.seed(  # the emulator's admin API: not rate-counted
            1, size=node.size, region="tor1", tags=[node.name], status="active"
        )
        Node.objects.filter(pk=node.pk).update(provider_id=str(droplet_id))
        nodes.append(node)
    before = provider_requests(lifecycle.emulator)
    assert nodes_poll(account_id=lifecycle.account.pk) == 200
    spent = provider_requests(lifecycle.emulator) - before
    assert spent <= 2, spent  # one listing page (per_page 200), maybe a second empty page
    assert Node.objects.filter(pk__in=[n.pk for n in nodes], status="booting").count() == 200
    assert not Node.objects.filter(pk__in=[n.pk for n in nodes], public_ip__isnull=True).exists()


@pytest.mark.parametrize("scopes", [None, ["book"]], ids=["session", "token"])
def test_a_booking_due_now_starts_without_waiting_for_the_sweep(lifecycle, alice, scopes):
    """No beat runs: only the on-commit enqueue can start it (with a session and with a token)."""
    lifecycle.start_worker(beat=False)
    response = client_for(alice, scopes=scopes).post(
        "/api/v1/bookings/", on_demand_body(lifecycle.pool), format="json"
    )
    assert response.status_code == 201, response.content
    booking_id = response.json()["id"]
    wait_for(
        lambda: len(our_ledger(lifecycle.emulator)) == 1,
        timeout_s=60,
        message="the droplet to be created with no sweep running",
    )
    assert Booking.objects.get(pk=booking_id).status == "provisioning"
    # The emulator records the droplet before it answers; the worker stores its id right after.
    wait_for(
        lambda: Node.objects.filter(booking_id=booking_id).exclude(provider_id="").exists(),
        timeout_s=30,
        message="the node to record its droplet",
    )

"""The lifecycle with real parts: Celery workers (subprocesses, Redis broker, real beat), the
DigitalOcean emulator over HTTP, and the real agent in fixture mode reporting to a live server.

Every scenario ends with zero droplets left at the provider (I-3) and usage that charges the lab
only for nodes that served it (I-5)."""

from decimal import Decimal

import pytest

from conftest import client_for
from labgpu.bookings.models import Booking
from labgpu.health.models import HealthReport
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.conftest import on_demand_body
from labgpu.provisioning.tests.harness import wait_for
from labgpu.usage.models import UsageRecord

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def booking_status(booking_id: int) -> str:
    return Booking.objects.get(pk=booking_id).status


def wait_status(world, booking_id: int, *statuses: str, timeout_s: float = 90) -> Booking:
    try:
        wait_for(
            lambda: booking_status(booking_id) in statuses,
            timeout_s=timeout_s,
            message=f"booking {booking_id} to be {statuses}",
        )
    except AssertionError:
        print(world.logs())
        raise
    return Booking.objects.get(pk=booking_id)


def assert_no_orphans(world) -> None:
    """I-3: nothing with our tag is left running at the provider."""
    wait_for(
        lambda: (
            not [
                d
                for d in world.emulator.droplets()
                if any(t.startswith("labgpu-node-") for t in d.get("tags", []))
            ]
        ),
        timeout_s=60,
        message="every droplet to be destroyed",
    )


def create_booking(alice, pool) -> int:
    response = client_for(alice).post("/api/v1/bookings/", on_demand_body(pool), format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def end_early(alice, booking_id: int) -> None:
    response = client_for(alice).post(f"/api/v1/bookings/{booking_id}/cancel/")
    assert response.status_code == 200, response.content


def test_booking_becomes_a_checked_node_and_is_torn_down_and_metered(lifecycle, alice):
    lifecycle.start_worker()
    booking_id = create_booking(alice, lifecycle.pool)

    booking = wait_status(lifecycle, booking_id, "ready")
    node = Node.objects.get(booking=booking)
    assert node.status == "ready" and node.public_ip
    report = HealthReport.objects.get(node=node)
    assert report.verdict in ("pass", "warn")
    detail = client_for(alice).get(f"/api/v1/bookings/{booking_id}/").json()
    assert detail["node"]["ssh_command"] == f"ssh root@{node.public_ip}"
    health = client_for(alice).get(f"/api/v1/nodes/{node.pk}/health/").json()
    assert health[0]["verdict"] == report.verdict
    assert len(lifecycle.emulator.droplets()) == 1

    end_early(alice, booking_id)
    booking = wait_status(lifecycle, booking_id, "completed")
    assert_no_orphans(lifecycle)
    node.refresh_from_db()
    assert node.status == "destroyed" and node.destroyed_at
    usage = UsageRecord.objects.get(node=node)
    assert usage.charged_to_lab and usage.seconds >= 0
    assert booking.consumed_gpu_hours == usage.gpu_hours
    assert booking.actual_cost == usage.cost
    assert "is ready" in lifecycle.mails()

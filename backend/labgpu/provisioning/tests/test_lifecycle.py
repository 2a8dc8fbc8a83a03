"""The lifecycle with real parts: Celery workers (subprocesses, Redis broker, real beat), the
DigitalOcean emulator over HTTP, and the real agent in fixture mode reporting to a live server.

Every scenario ends with zero droplets left at the provider (I-3) and usage that charges the lab
only for nodes that served it (I-5)."""

import pytest

from conftest import client_for
from labgpu.bookings.models import Booking
from labgpu.health.models import HealthReport
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.conftest import on_demand_body
from labgpu.provisioning.tests.harness import TIME_SCALE, wait_for
from labgpu.provisioning.tests.ledger import assert_booking_billed_from_ledger, assert_ledger_exact
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
    ledger = assert_ledger_exact(lifecycle.emulator)
    assert [e["name"] for e in ledger] == [node.name]
    usage = UsageRecord.objects.get(node=node)
    assert usage.charged_to_lab and usage.droplet_id == str(ledger[0]["id"])
    assert_booking_billed_from_ledger(booking_id, ledger)
    assert booking.consumed_gpu_hours == usage.gpu_hours > 0
    assert booking.actual_cost == usage.cost
    wait_for(lambda: "is ready" in lifecycle.mails(), timeout_s=30, message="the e-mail")


def complete_and_check(world, alice, booking_id: int) -> Booking:
    end_early(alice, booking_id)
    booking = wait_status(world, booking_id, "completed")
    assert_no_orphans(world)
    assert not Node.objects.filter(booking_id=booking_id).exclude(status="destroyed").exists()
    charged = [u for u in UsageRecord.objects.filter(booking_id=booking_id) if u.charged_to_lab]
    assert booking.consumed_gpu_hours == sum((u.gpu_hours for u in charged), 0)
    world.ledger = assert_ledger_exact(world.emulator)
    assert_booking_billed_from_ledger(booking_id, world.ledger)
    return booking


def test_a_429_storm_is_ridden_out(lifecycle, alice):
    lifecycle.emulator.configure(rate_limit=3, rate_window_s=4)
    # Burst-limit 429s say when to come back (`retry-after`); without it the driver waits out
    # DigitalOcean's 60 s burst window, nine times over.
    storm = [
        {"method": method, "path": "/v2/droplets*", "status": 429, "retry_after": 1, "times": 3}
        for method in ("POST", "GET", "DELETE")
    ]
    lifecycle.emulator.set_faults(next=storm)
    lifecycle.start_worker()
    booking_id = create_booking(alice, lifecycle.pool)
    wait_status(lifecycle, booking_id, "ready")
    complete_and_check(lifecycle, alice, booking_id)
    counters = lifecycle.emulator.state()["counters"]
    assert counters["by_status"].get("429", 0) >= 9, counters
    assert len(lifecycle.ledger) == 1


def test_I4_retried_provision_adopts_the_droplet_a_5xx_hid(lifecycle, alice):
    """I-4: the create succeeded but answered 500; the retry must adopt, not create again."""
    lifecycle.emulator.fail_next("POST", "/v2/droplets", 500, after_create=True)
    lifecycle.start_worker()
    booking_id = create_booking(alice, lifecycle.pool)
    wait_status(lifecycle, booking_id, "ready")
    assert len(lifecycle.emulator.droplets()) == 1
    assert Node.objects.filter(booking_id=booking_id).count() == 1
    complete_and_check(lifecycle, alice, booking_id)
    assert len(lifecycle.ledger) == 1


def test_I4_worker_killed_mid_provision_leaves_exactly_one_droplet(lifecycle, alice):
    # The droplet is made, then the answer is held back while we SIGKILL the worker.
    lifecycle.emulator.set_faults(next=[{"method": "POST", "path": "/v2/droplets", "delay_s": 5}])
    worker = lifecycle.start_worker()
    booking_id = create_booking(alice, lifecycle.pool)
    wait_for(lambda: lifecycle.emulator.droplets(), timeout_s=60, message="the droplet")
    worker.kill()
    lifecycle.start_worker()
    wait_status(lifecycle, booking_id, "ready")
    complete_and_check(lifecycle, alice, booking_id)
    assert len(lifecycle.ledger) == 1


def test_redis_restarted_mid_run(lifecycle, alice):
    lifecycle.emulator.configure(boot_delay_s=3)
    lifecycle.start_worker()
    # Celery's worker may exit when its broker goes away (kombu raises while closing the dead
    # connection); in production the process supervisor restarts it, as this does.
    lifecycle.supervise()
    booking_id = create_booking(alice, lifecycle.pool)
    wait_for(lambda: lifecycle.emulator.droplets(), timeout_s=60, message="the droplet")
    lifecycle.redis.restart(down_s=2)  # queued messages are lost: sweeps must re-drive the work
    wait_status(lifecycle, booking_id, "ready")
    complete_and_check(lifecycle, alice, booking_id)


def test_I3_droplet_vanishing_while_ready_is_replaced(lifecycle, alice):
    lifecycle.start_worker()
    booking_id = create_booking(alice, lifecycle.pool)
    wait_status(lifecycle, booking_id, "ready")
    first = Node.objects.get(booking_id=booking_id)
    lifecycle.emulator.vanish(int(first.provider_id))
    wait_for(
        lambda: Node.objects.filter(booking_id=booking_id, attempt=2, status="ready").exists(),
        timeout_s=90,
        message="the replacement node",
    )
    first.refresh_from_db()
    assert first.failure_reason and first.failed_at
    booking = complete_and_check(lifecycle, alice, booking_id)
    assert len(lifecycle.ledger) == 2
    assert UsageRecord.objects.get(node=first).charged_to_lab is False
    assert booking.consumed_gpu_hours == UsageRecord.objects.get(node__attempt=2).gpu_hours


def test_I3_destroy_failing_several_times_still_ends_with_no_droplet(lifecycle, alice):
    lifecycle.start_worker()
    booking_id = create_booking(alice, lifecycle.pool)
    wait_status(lifecycle, booking_id, "ready")
    lifecycle.emulator.fail_next("DELETE", "/v2/droplets/*", 500, times=6)
    complete_and_check(lifecycle, alice, booking_id)
    assert len(lifecycle.ledger) == 1
    assert lifecycle.emulator.state()["counters"]["by_status"].get("500", 0) >= 6


def test_I5_agent_that_never_reports_is_replaced_then_the_booking_fails(lifecycle, alice):
    lifecycle.emulator.set_faults(size_profiles={"gpu-mi300x1-192gb": "none"})
    lifecycle.start_worker(LABGPU_AGENT_REPORT_TIMEOUT_S=str(2 / TIME_SCALE))
    booking_id = create_booking(alice, lifecycle.pool)
    booking = wait_status(lifecycle, booking_id, "failed", timeout_s=120)
    assert "never reported" in booking.failure_reason
    assert Node.objects.filter(booking_id=booking_id).count() == 2
    ledger = assert_ledger_exact(lifecycle.emulator)
    assert len(ledger) == 2 and UsageRecord.objects.filter(booking_id=booking_id).count() == 2
    assert not UsageRecord.objects.filter(booking_id=booking_id, charged_to_lab=True).exists()
    wait_for(
        lambda: Booking.objects.get(pk=booking_id).consumed_gpu_hours is not None,
        timeout_s=30,
        message="the failed booking metered",
    )
    assert_booking_billed_from_ledger(booking_id, ledger)
    wait_for(lambda: "failed" in lifecycle.mails(), timeout_s=30, message="the e-mail")


def test_I5_failing_health_report_replaces_once_then_fails_with_the_findings(lifecycle, alice):
    lifecycle.emulator.set_faults(size_profiles={"gpu-mi300x1-192gb": "ecc-errors"})
    lifecycle.start_worker()
    booking_id = create_booking(alice, lifecycle.pool)
    booking = wait_status(lifecycle, booking_id, "failed", timeout_s=120)
    assert "health checks" in booking.failure_reason
    failed_nodes = HealthReport.objects.filter(node__booking_id=booking_id, verdict="fail")
    assert failed_nodes.values("node").distinct().count() == 2
    ledger = assert_ledger_exact(lifecycle.emulator)
    assert len(ledger) == 2
    assert not UsageRecord.objects.filter(booking_id=booking_id, charged_to_lab=True).exists()
    detail = client_for(alice).get(f"/api/v1/bookings/{booking_id}/").json()
    assert detail["status"] == "failed" and "ECC" in detail["failure_reason"].upper()

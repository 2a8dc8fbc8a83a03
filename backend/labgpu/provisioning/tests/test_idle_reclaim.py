"""Idle reclaim end to end: the real agent in fixture mode (told to go idle and come back through
its control file), its heartbeats to a live API, a real worker whose beat runs the idle sweep,
and the emulator destroying the droplet once the idle booking ends early.

`LABGPU_IDLE_MINUTE_S` makes the pool's minutes 0.5 s in the worker (given in production seconds,
so divided by the harness's time scale), so the test takes seconds; the agents heartbeat every
10 production seconds (a setting an operator may choose), 1 s here, so use and idleness show
within a policy minute."""

from pathlib import Path

import pytest

from conftest import client_for
from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Booking
from labgpu.provisioning.tests.harness import TIME_SCALE, scaled_bound, wait_for
from labgpu.provisioning.tests.test_lifecycle import assert_no_orphans, create_booking, wait_status
from labgpu.usage.models import BookingUtilisation

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _heartbeat_every_ten_seconds(lifecycle, settings):
    """The API (this process) tells each agent its interval in the bootstrap answer."""
    settings.LABGPU_HEARTBEAT_INTERVAL_S = scaled_bound(10)


def totals(booking_id: int) -> BookingUtilisation | None:
    return BookingUtilisation.objects.filter(booking_id=booking_id).first()


def control_file(world) -> Path:
    (droplet,) = world.emulator.droplets()
    return Path(droplet["agent"]["log"]).parent / "usage"


def test_idle_node_is_warned_comes_back_then_goes_idle_and_its_booking_ends_early(lifecycle, alice):
    lifecycle.pool.idle_reclaim_minutes = 6  # 3 s
    lifecycle.pool.idle_grace_minutes = 8  # 4 s
    lifecycle.pool.save(update_fields=["idle_reclaim_minutes", "idle_grace_minutes"])
    lifecycle.start_worker(LABGPU_IDLE_MINUTE_S=str(0.5 / TIME_SCALE))
    booking_id = create_booking(alice, lifecycle.pool)
    wait_status(lifecycle, booking_id, "ready")

    # Busy: the agent's varying numbers arrive, count as used time and show on the booking.
    wait_for(lambda: (t := totals(booking_id)) and t.active_s > 0, timeout_s=30, message="use")
    live = client_for(alice).get(f"/api/v1/bookings/{booking_id}/utilisation/").json()
    assert live["samples"] and live["samples"][-1]["utilisation_pct"] >= 35
    assert live["idle_policy"] == {"idle_minutes": 6, "grace_minutes": 8}

    # Idle: warned (not ended) …
    control_file(lifecycle).write_text("idle")
    wait_for(lambda: totals(booking_id).idle_warned_at, timeout_s=60, message="the idle warning")
    assert Booking.objects.get(pk=booking_id).status == "ready"
    # … and back in use before the grace ends: the warning is lifted, the booking stays.
    control_file(lifecycle).write_text("busy")
    wait_for(lambda: totals(booking_id).idle_warned_at is None, timeout_s=30, message="use again")
    assert Booking.objects.get(pk=booking_id).status == "ready"

    # Idle for good: warned again, then ended early with the reason, audited, node destroyed.
    control_file(lifecycle).write_text("idle")
    booking = wait_status(lifecycle, booking_id, "completed", timeout_s=120)
    assert "idle" in booking.end_reason
    assert booking.ended_at < booking.end
    assert AuditEvent.objects.filter(action="booking.idle_warning").count() == 2
    assert AuditEvent.objects.filter(action="booking.idle_reclaim").count() == 1
    assert_no_orphans(lifecycle)
    detail = client_for(alice).get(f"/api/v1/bookings/{booking_id}/").json()
    assert "idle" in detail["end_reason"]
    wait_for(lambda: "looks idle" in lifecycle.mails(), timeout_s=30, message="the warning mail")
    wait_for(lambda: "ended early" in lifecycle.mails(), timeout_s=30, message="the end mail")


def test_the_demos_idle_tag_alone_sends_a_busy_node_idle_and_its_booking_is_warned(
    lifecycle, alice, settings
):
    """`make run`'s demo: no control file, only the emulator's idle tag (the booking's droplet tag
    that seed_demo --live names, `LABGPU_EMULATOR_IDLE_AFTER=labgpu-booking-<id>=N`, here set as
    its fault) — the real agent reports use, then after N heartbeats idle GPUs and no session, and
    the pool's idle policy warns the booking."""
    from labgpu.health.models import UtilisationSample
    from labgpu.provisioning.services.nodes import booking_tag

    settings.LABGPU_UTILISATION_SAMPLE_MIN_S = 0  # every heartbeat a sample (the API runs here)
    lifecycle.pool.idle_reclaim_minutes = 6  # 3 s
    lifecycle.pool.idle_grace_minutes = 1440  # 12 min: it stays warned, not ended, here
    lifecycle.pool.save(update_fields=["idle_reclaim_minutes", "idle_grace_minutes"])
    booking_id = create_booking(alice, lifecycle.pool)  # its node waits for the worker
    lifecycle.emulator.set_faults(idle_after={booking_tag(booking_id): 2})
    lifecycle.start_worker(LABGPU_IDLE_MINUTE_S=str(0.5 / TIME_SCALE))
    wait_status(lifecycle, booking_id, "ready")

    wait_for(lambda: (t := totals(booking_id)) and t.idle_warned_at, timeout_s=90, message="warned")
    samples = UtilisationSample.objects.filter(booking_id=booking_id).order_by("at")
    assert samples.filter(utilisation_pct__gte=35, active=True).exists(), "busy at first"
    assert samples.last().utilisation_pct == 0 and samples.last().ssh_sessions == 0
    assert not control_file(lifecycle).exists()
    assert Booking.objects.get(pk=booking_id).status == "ready"
    assert AuditEvent.objects.filter(action="booking.idle_warning").count() == 1


def test_the_h100_demo_type_boots_ready_on_an_h100_recording_and_is_warned_idle(
    lifecycle, alice, settings
):
    """Issue 23 item 6: `make run`'s H100 pool (seed_demo's `h100-1`: agent profile `h100`, size
    gpu-h100x1-80gb) boots through the emulator, whose agent replays `healthy-h100` — a published
    capture of a real H100 — so the gate passes (it failed on the H200 recording: "is a NVIDIA
    H200, not the H100"), the booking becomes ready and the idle tag gets it warned."""
    from labgpu.demo.management.commands.seed_demo import IDLE_DEMO_POOL, INSTANCE_TYPES, POOLS
    from labgpu.health.models import HealthReport
    from labgpu.provisioning.services.nodes import booking_tag

    settings.LABGPU_UTILISATION_SAMPLE_MIN_S = 0
    # The idle demo pool's instance type, as seed_demo defines it.
    (pool,) = [p for p in POOLS if p["slug"] == IDLE_DEMO_POOL]
    (demo,) = [t for t in INSTANCE_TYPES if t["slug"] == pool["type"]]
    assert demo["agent_profile"] == "h100"
    instance_type = lifecycle.pool.instance_type
    for name in ("agent_profile", "provider_size", "image", "gpu_vendor", "gpu_model"):
        setattr(instance_type, name, demo[name])
    lifecycle.pool.region = pool["region"]
    instance_type.save()
    lifecycle.pool.idle_reclaim_minutes = 6  # 3 s
    lifecycle.pool.idle_grace_minutes = 1440
    lifecycle.pool.save(update_fields=["idle_reclaim_minutes", "idle_grace_minutes", "region"])
    booking_id = create_booking(alice, lifecycle.pool)
    lifecycle.emulator.set_faults(idle_after={booking_tag(booking_id): 2})
    lifecycle.start_worker(LABGPU_IDLE_MINUTE_S=str(0.5 / TIME_SCALE))
    wait_status(lifecycle, booking_id, "ready")

    (droplet,) = lifecycle.emulator.droplets()
    assert droplet["agent"]["profile"] == "healthy-h100"
    report = HealthReport.objects.get(node__booking_id=booking_id)
    # healthy: a pass with no finding at all (the capture's missing device list once made it warn)
    assert (report.verdict, report.findings) == (HealthReport.Verdict.PASS, [])
    assert report.profile == "h100"
    assert [g["model"] for g in report.facts["gpus"]] == ["NVIDIA H100 80GB HBM3"]
    wait_for(lambda: (t := totals(booking_id)) and t.idle_warned_at, timeout_s=90, message="warned")

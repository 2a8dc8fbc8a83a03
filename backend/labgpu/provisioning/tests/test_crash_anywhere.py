"""Crash anywhere (I-8 with I-3, I-4, I-5): a worker is SIGKILLed — with its process group, as a
machine dies — at each named point of the lifecycle, or the web tier dies mid-request at each of
its points; then a fresh worker carries on. After every run, checked against the emulator's own
ledger of creates and deletes:

- zero droplets left, and never two droplets for one node attempt;
- exactly one usage record per droplet, billed from the provider's `created_at` to the DELETE it
  accepted, charged to the lab only if the node was handed over healthy, and the booking's hours
  equal to the provider's lifetimes;
- at no sampled moment a `ready` booking without a droplet, an IP (SSH) and a passing report;
- the lifecycle resumed within 60 s (production seconds, at the harness's time scale) of the new
  worker being ready: the booking handed over, or completed, by the database's and the
  emulator's timestamps (the droplet's and its agent's own boot not counted).

The points crashed at are the ones in the code: every `crash_point("…")` literal under labgpu/ is
found by scanning the source, and each needs a scenario below, so a new point without a test
fails the suite, and a scenario whose point is gone fails it too. A point the run never reaches
fails its test.
"""

import random
import re
import time

import pytest

from config.settings import SCALED_TIMINGS
from conftest import client_for
from labgpu.bookings.models import Booking
from labgpu.core import crashpoints
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.harness import BACKEND_DIR, scaled_bound, wait_for
from labgpu.provisioning.tests.ledger import (
    ReadyWatcher,
    assert_booking_billed_from_ledger,
    assert_ledger_exact,
)
from labgpu.provisioning.tests.test_lifecycle import create_booking, end_early, wait_status

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    # The web tier's crash escapes its request thread on purpose (a dying process).
    pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning"),
]

# In which part of the lifecycle a point is reached: while provisioning, while tearing down after
# an early end, when the booking's end passes (the end sweep), or in any of them.
PROVISION, TEARDOWN, END, ANY = "provision", "teardown", "end", "any"
# "With production settings, a worker killed at any point resumes the lifecycle within 60 s after
# a worker is running again" (issue 29), here at the harness's time scale.
RESUME_WITHIN_S = scaled_bound(60)

# Where a worker dies, and in which part of the lifecycle the point is reached.
WORKER_POINTS = {
    "start.before_node_request": PROVISION,
    "outbox.before_publish": PROVISION,
    "lease.after_claim": PROVISION,
    "provision.after_creating": PROVISION,
    "provision.before_create_post": PROVISION,
    "provision.after_create_post": PROVISION,
    "provision.after_record": PROVISION,
    "poll.after_list": PROVISION,
    "reconcile.after_list": ANY,
    "end.after_ending": END,
    "wind_down.after_drain": TEARDOWN,
    "drain.after_draining": TEARDOWN,
    "teardown.after_destroying": TEARDOWN,
    "teardown.before_delete_record": TEARDOWN,
    "teardown.after_delete": TEARDOWN,
    "teardown.after_confirm": TEARDOWN,
    "teardown.after_destroyed": TEARDOWN,
    "complete.before_meter": TEARDOWN,
}
# Where the web tier dies mid-request (the agent's calls, the user's early end).
WEB_POINTS = {
    "bootstrap.before_claim": PROVISION,
    "bootstrap.before_commit": PROVISION,
    "report.before_store": PROVISION,
    "report.after_passed": PROVISION,
    "outbox.before_publish": TEARDOWN,
}
# Reached only on a pool with persistent volumes: test_volume_lifecycle.py crashes there.
VOLUME_POINTS = [
    "volume.after_create",
    "teardown.after_shutdown",
    "teardown.after_detach_request",
    "teardown.after_detach",
]
# Reached only while a node is failed: its own test below.
FAIL_POINTS = ["fail.before_commit"]
COVERED = {*WORKER_POINTS, *WEB_POINTS, *VOLUME_POINTS, *FAIL_POINTS}

_CALL = re.compile(r"\bcrash_point\(")
_LITERAL = re.compile(r"\bcrash_point\(\s*\"([a-z_]+\.[a-z_]+)\"\s*\)")


def crash_points_in_code() -> set[str]:
    """Every point named in the source (labgpu/, tests aside). A call whose name is not a literal
    would hide from this scan, so it fails here."""
    found: set[str] = set()
    for path in sorted((BACKEND_DIR / "labgpu").rglob("*.py")):
        if "tests" in path.parts or path.name == "crashpoints.py":
            continue
        text = path.read_text()
        literals = _LITERAL.findall(text)
        assert len(literals) == len(_CALL.findall(text)), f"{path}: a crash_point without a literal"
        found.update(literals)
    return found


CODE_POINTS = crash_points_in_code()


def test_every_crash_point_in_the_code_has_a_crash_test_and_every_test_a_point():
    assert set() == CODE_POINTS - COVERED, "crash points no test crashes at"
    assert set() == COVERED - CODE_POINTS, "crash tests for points the code no longer has"


def crashed_at(marker, point: str) -> bool:
    return marker.exists() and point in marker.read_text().split()


def finish(world, alice, booking_id: int) -> Booking:
    """Carry the booking to its end: ready, ended early, completed."""
    if Booking.objects.get(pk=booking_id).status not in ("ending", "completed"):
        wait_status(world, booking_id, "ready", timeout_s=120)
        end_early(alice, booking_id)
    return wait_status(world, booking_id, "completed", timeout_s=120)


def check_one_healthy_droplet(world, booking_id: int, watcher: ReadyWatcher) -> None:
    assert watcher.samples > 0 and not watcher.violations, watcher.violations
    ledger = assert_ledger_exact(world.emulator)
    assert len(ledger) == 1, ledger  # a crash never costs a second droplet
    node = Node.objects.get(booking_id=booking_id)
    assert node.status == "destroyed" and node.ready_at and not node.failed_at
    assert_booking_billed_from_ledger(booking_id, ledger)


def check_resumed(world, booking_id: int, phase: str, since: float) -> float:
    """The lifecycle went on to its next resting point within RESUME_WITHIN_S of the new worker
    being ready, read from the database and the emulator's ledger: provisioning, the booking
    handed over (its node ready: droplet made, its agent's bootstrap answered and report passed,
    its address recorded); tearing down, the booking completed (the provider accepted the DELETE,
    the node destroyed, metered). Not counted: the droplet's and its agent's own boot after
    `since`, from the provider's create (ledger `created_at`) to the agent's first bootstrap
    (`bootstrap_used_at`) — the provider's and the machine's time, which no setting scales (a real
    GPU droplet takes minutes). A point reached after that moment (a crash once the work was done)
    has nothing left to resume and counts 0. Returns the seconds waited."""
    booting = 0.0
    if phase in (TEARDOWN, END):
        booking = wait_status(world, booking_id, "completed", timeout_s=120)
        (entry,) = [e for e in world.emulator.ledger() if e["delete_requested_at"]]
        resumed_at = max(booking.status_changed_at.timestamp(), entry["delete_requested_at"])
    else:
        wait_status(world, booking_id, "ready", timeout_s=120)
        node = Node.objects.get(booking_id=booking_id, ready_at__isnull=False)
        (entry,) = [e for e in world.emulator.ledger() if e["name"] == node.name]
        resumed_at = node.ready_at.timestamp()
        booting = max(0.0, node.bootstrap_used_at.timestamp() - max(entry["created_at"], since))
    waited = max(0.0, resumed_at - since - booting)
    print(
        f"resumed {waited:.2f} s after the worker was ready (bound {RESUME_WITHIN_S:.2f} s; "
        f"{booting:.2f} s of the droplet's and agent's boot not counted)"
    )
    assert waited <= RESUME_WITHIN_S, (waited, booting, RESUME_WITHIN_S)
    return waited


def pass_the_end(booking_id: int) -> None:
    """The booking's end comes now (its slot is kept: reserved_end stays)."""
    Booking.objects.filter(pk=booking_id).update(end=now())


# Derived from the code: every point found there but the volume, fail and web-only ones; a new
# one without a scenario fails here.
WORKER_CRASHES = sorted(
    CODE_POINTS - {*VOLUME_POINTS, *FAIL_POINTS} - (set(WEB_POINTS) - set(WORKER_POINTS))
)


@pytest.mark.parametrize("point", WORKER_CRASHES)
def test_I8_worker_killed_at_each_point_keeps_the_ledger_exact(lifecycle, alice, tmp_path, point):
    phase = WORKER_POINTS.get(point)
    if phase is None:
        pytest.fail(f"no crash scenario for crash point {point!r}: add it to WORKER_POINTS")
    marker = tmp_path / "crashed"
    crashing = lifecycle.start_worker(LABGPU_CRASH_AT=point, LABGPU_CRASH_MARKER=str(marker))
    with ReadyWatcher() as watcher:
        booking_id = create_booking(alice, lifecycle.pool)
        if phase in (TEARDOWN, END):
            wait_status(lifecycle, booking_id, "ready")
            if phase == END:
                pass_the_end(booking_id)
            else:
                end_early(alice, booking_id)
        wait_for(
            lambda: crashed_at(marker, point) and crashing.process.poll() is not None,
            timeout_s=90,
            message=f"the worker to die at {point}",
        )
        crashing.killed = True
        restarted = lifecycle.start_worker()
        check_resumed(lifecycle, booking_id, phase, since=restarted.wait_ready())
        finish(lifecycle, alice, booking_id)
    check_one_healthy_droplet(lifecycle, booking_id, watcher)


def test_a_booking_whose_end_passes_while_no_worker_runs_is_torn_down_soon_after_one_is_back(
    lifecycle, alice
):
    worker = lifecycle.start_worker()
    booking_id = create_booking(alice, lifecycle.pool)
    wait_status(lifecycle, booking_id, "ready")
    worker.kill()
    pass_the_end(booking_id)
    time.sleep(scaled_bound(60))  # a minute with no worker at all
    back = lifecycle.start_worker()
    check_resumed(lifecycle, booking_id, END, since=back.wait_ready())
    wait_status(lifecycle, booking_id, "completed", timeout_s=120)
    ledger = assert_ledger_exact(lifecycle.emulator)
    assert len(ledger) == 1
    assert_booking_billed_from_ledger(booking_id, ledger)


@pytest.mark.parametrize(("point", "phase"), WEB_POINTS.items(), ids=list(WEB_POINTS))
def test_I8_web_tier_dying_at_each_point_keeps_the_ledger_exact(
    lifecycle, alice, tmp_path, monkeypatch, point, phase
):
    marker = tmp_path / "crashed"
    monkeypatch.setenv("LABGPU_CRASH_MARKER", str(marker))
    lifecycle.start_worker()
    with ReadyWatcher() as watcher:
        booking_id = create_booking(alice, lifecycle.pool)
        if phase == TEARDOWN:
            wait_status(lifecycle, booking_id, "ready")
            crashpoints.arm(point)
            with pytest.raises(crashpoints.CrashPointReached):
                # The in-process client has no server around it: the crash reaches the caller.
                client_for(alice).post(f"/api/v1/bookings/{booking_id}/cancel/")
        else:
            crashpoints.arm(point)
        try:
            finish(lifecycle, alice, booking_id)
        finally:
            crashpoints.disarm_all()
    assert crashed_at(marker, point), f"the web tier never reached {point}"
    check_one_healthy_droplet(lifecycle, booking_id, watcher)


def test_web_tier_dying_while_failing_a_node_still_replaces_it_and_charges_nothing(
    lifecycle, alice, tmp_path, monkeypatch
):
    marker = tmp_path / "crashed"
    monkeypatch.setenv("LABGPU_CRASH_MARKER", str(marker))
    lifecycle.emulator.set_faults(size_profiles={"gpu-mi300x1-192gb": "ecc-errors"})
    lifecycle.start_worker()
    crashpoints.arm("fail.before_commit")
    try:
        booking_id = create_booking(alice, lifecycle.pool)
        booking = wait_status(lifecycle, booking_id, "failed", timeout_s=120)
    finally:
        crashpoints.disarm_all()
    assert crashed_at(marker, "fail.before_commit")
    ledger = assert_ledger_exact(lifecycle.emulator)
    assert len(ledger) == 2, ledger  # the first node and its one replacement
    assert_booking_billed_from_ledger(booking_id, ledger)
    assert booking.failure_reason


def test_I8_worker_killed_at_random_moments_keeps_the_ledger_exact(lifecycle, alice):
    rng = random.Random(20261130)  # fixed: a failure can be replayed
    worker = lifecycle.start_worker()
    with ReadyWatcher() as watcher:
        booking_id = create_booking(alice, lifecycle.pool)
        for _ in range(3):
            time.sleep(rng.uniform(0.3, 3.0))
            worker.kill()
            worker = lifecycle.start_worker()
        finish(lifecycle, alice, booking_id)
        # and once more while it tears down
        worker.kill()
        lifecycle.start_worker()
    check_one_healthy_droplet(lifecycle, booking_id, watcher)


def test_a_dead_workers_lease_lapses_quickly(lifecycle, alice, settings):
    """A create answered slowly, the worker killed while it waits: its lease is short (renewed only
    while it lives), so neither the create's retry nor the user's teardown waits minutes."""
    lifecycle.emulator.set_faults(next=[{"method": "POST", "path": "/v2/droplets", "delay_s": 8}])
    worker = lifecycle.start_worker()
    booking_id = create_booking(alice, lifecycle.pool)
    wait_for(
        lambda: Node.objects.filter(booking_id=booking_id, lease_until__isnull=False).exists(),
        timeout_s=60,
        message="the provisioning lease",
    )
    wait_for(lambda: lifecycle.emulator.droplets(), timeout_s=60, message="the droplet")
    worker.kill()
    node = Node.objects.get(booking_id=booking_id)
    lease_s = scaled_bound(SCALED_TIMINGS["LABGPU_PROVIDER_LEASE_S"])
    from labgpu.core.timeutils import now

    assert node.lease_until is not None
    assert (node.lease_until - now()).total_seconds() <= lease_s
    lifecycle.start_worker()
    wait_status(lifecycle, booking_id, "ready")
    finish(lifecycle, alice, booking_id)
    ledger = assert_ledger_exact(lifecycle.emulator)
    assert len(ledger) == 1

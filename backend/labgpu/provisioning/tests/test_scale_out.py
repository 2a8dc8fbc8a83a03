"""Several web and worker processes against one PostgreSQL and Redis behave as one, and losing
any one of them delays no booking's start or end by more than 15 s (issue 29 item 9)."""

import subprocess
import time

import httpx
import pytest

from labgpu.accounts.services import token_create
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.conftest import on_demand_body
from labgpu.provisioning.tests.harness import (
    BACKEND_DIR,
    VENV_BIN,
    free_port,
    scale_lifecycle_timings,
    scaled_bound,
    wait_for,
)
from labgpu.provisioning.tests.ledger import assert_booking_billed_from_ledger, assert_ledger_exact
from labgpu.provisioning.tests.test_crash_anywhere import pass_the_end
from labgpu.provisioning.tests.test_lifecycle import assert_no_orphans, create_booking, wait_status

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def gunicorn(lifecycle, tmp_path):
    """A second web tier: gunicorn with two worker processes on the same database."""
    port = free_port()
    log = (tmp_path / "gunicorn.log").open("wb")
    env = {
        **lifecycle.env,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LABGPU_THROTTLE_USER": "100000/min",
    }
    process = subprocess.Popen(
        [
            str(VENV_BIN / "gunicorn"),
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
        ],
        cwd=BACKEND_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: _up(url), timeout_s=30, message="gunicorn to start")
    yield url
    process.terminate()
    process.wait(timeout=15)
    log.close()


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_two_workers_and_two_web_tiers_run_the_happy_path_as_one(lifecycle, gunicorn, alice):
    first = lifecycle.start_worker()  # the one beat
    second = lifecycle.start_worker(beat=False)
    _, raw = token_create(user=alice, name="scale", scopes=["book"])
    api = httpx.Client(base_url=gunicorn, headers={"Authorization": f"Bearer {raw}"}, timeout=30)

    created = api.post("/api/v1/bookings/", json=on_demand_body(lifecycle.pool))
    assert created.status_code == 201, created.text
    booking_id = created.json()["id"]
    # Agents report to the live server (the first web tier); the user polls the second.
    wait_status(lifecycle, booking_id, "ready")
    assert api.get(f"/api/v1/bookings/{booking_id}/").json()["node"]["ssh_command"]

    assert api.post(f"/api/v1/bookings/{booking_id}/cancel/").status_code == 200
    wait_status(lifecycle, booking_id, "completed")
    assert_no_orphans(lifecycle)
    assert Node.objects.filter(booking_id=booking_id).count() == 1
    assert lifecycle.emulator.state()["counters"]["creates"] == 1
    for worker in (first, second):
        assert "succeeded" in worker.log_path.read_text(), "both workers took work"


# "Losing any one process delays no booking's start or end by more than 15 s while another of its
# kind runs." This test runs with production timings (scale 1: the lease 6 s, the orphan sweep
# every 2 s, the beat's lock 5 s, the end sweep every 5 s); a faster scale left less room than the
# machine's own second or two of real-time overhead.
FAILOVER_SCALE = 1.0
DELAY_BOUND_S = scaled_bound(15, FAILOVER_SCALE)


def holding(workers, task: str):
    """The worker that received `task` (its log's `Task <name>[<id>] received` line)."""
    received = f"Task labgpu.provisioning.tasks.{task}["
    return next((w for w in workers if received in w.log_path.read_text(errors="replace")), None)


def test_losing_a_worker_or_the_leading_beat_delays_no_start_or_end_past_15_s(
    lifecycle, alice, settings
):
    """Two workers and two beats, each its own process: the worker that took a booking's create
    is SIGKILLed while the provider answers slowly, and the other finishes the create; then the
    leading beat is SIGKILLed and the booking's end passes, and the other beat's sweep ends it.
    Delays are measured against the emulator's own ledger."""
    scale = {"LABGPU_TIME_SCALE": str(FAILOVER_SCALE)}
    scale_lifecycle_timings(settings, FAILOVER_SCALE)
    beats = [lifecycle.start_beat(**scale), lifecycle.start_beat(**scale)]
    workers = [lifecycle.start_worker(beat=False, **scale) for _ in range(2)]
    for process in workers:
        process.wait_ready()
    wait_for(lambda: any(b.leading for b in beats), timeout_s=30, message="a beat to lead")

    # A worker dies with the create in hand (the provider takes 3 s to answer it).
    lifecycle.emulator.set_faults(next=[{"method": "POST", "path": "/v2/droplets", "delay_s": 3}])
    booking_id = create_booking(alice, lifecycle.pool)
    holder = wait_for(
        lambda: holding(workers, "provision_node"), timeout_s=30, message="a worker to take it"
    )
    holder.kill()
    killed_at = time.time()
    node = wait_for(
        lambda: Node.objects.filter(booking_id=booking_id).exclude(provider_id="").first(),
        timeout_s=60,
        message="the other worker to finish the create",
    )
    start_delay = time.time() - killed_at
    assert start_delay <= DELAY_BOUND_S, (start_delay, DELAY_BOUND_S)
    wait_status(lifecycle, booking_id, "ready", timeout_s=120)

    # The leading beat dies; the booking's end passes; the other beat's end sweep tears it down.
    leader = next(b for b in beats if b.leading)
    leader.kill()
    pass_the_end(booking_id)
    ended_at = time.time()
    wait_status(lifecycle, booking_id, "completed", timeout_s=120)
    (entry,) = [e for e in lifecycle.emulator.ledger() if e["name"] == node.name]
    end_delay = entry["delete_requested_at"] - ended_at
    assert end_delay <= DELAY_BOUND_S, (end_delay, DELAY_BOUND_S)
    assert any(b.leading for b in beats if b is not leader)

    ledger = assert_ledger_exact(lifecycle.emulator)
    assert len(ledger) == 1, ledger  # the takeover adopted or made the one droplet
    assert_booking_billed_from_ledger(booking_id, ledger)
    print(f"failover: start delay {start_delay:.1f} s, end delay {end_delay:.1f} s")

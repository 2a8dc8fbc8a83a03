"""Several web and worker processes against one PostgreSQL and Redis behave as one."""

import subprocess

import httpx
import pytest

from labgpu.accounts.services import token_create
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.conftest import on_demand_body
from labgpu.provisioning.tests.harness import BACKEND_DIR, VENV_BIN, free_port, wait_for
from labgpu.provisioning.tests.test_lifecycle import assert_no_orphans, wait_status

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

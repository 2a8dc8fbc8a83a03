"""Issue 15 item 3 with real parts: a JupyterLab booking through the Celery workers, the emulator
and the real agent in fixture mode, which receives the token at bootstrap and reports the
notebook running; the owner then gets the tunnel and the URL."""

import pytest

from conftest import client_for
from labgpu.bookings.services import booking_notebook_token
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.conftest import on_demand_body
from labgpu.provisioning.tests.harness import wait_for
from labgpu.provisioning.tests.test_lifecycle import complete_and_check, wait_status

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_fixture_agent_reports_the_notebook_running_and_the_owner_gets_the_url(lifecycle, alice):
    lifecycle.start_worker()
    body = {**on_demand_body(lifecycle.pool), "jupyter": True}
    created = client_for(alice).post("/api/v1/bookings/", body, format="json")
    assert created.status_code == 201, created.content
    booking_id = created.json()["id"]

    booking = wait_status(lifecycle, booking_id, "ready")
    node = Node.objects.get(booking=booking)
    wait_for(
        lambda: Node.objects.get(pk=node.pk).notebook_state == "running",
        timeout_s=60,
        message="the agent to report the notebook running",
    )
    access = client_for(alice).get(f"/api/v1/bookings/{booking_id}/notebook/").json()
    token = booking_notebook_token(booking=booking)
    assert access["state"] == "running"
    assert access["tunnel_command"] == f"ssh -N -L 8888:127.0.0.1:8888 root@{node.public_ip}"
    assert access["url"] == f"http://127.0.0.1:8888/lab?token={token}"

    complete_and_check(lifecycle, alice, booking_id)

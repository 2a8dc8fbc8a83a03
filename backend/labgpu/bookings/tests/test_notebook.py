"""Issue 15 item 3: JupyterLab on a booking's node, its token seen only by the booking's owner."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from conftest import client_for
from labgpu.accounts.tests.factories import MembershipFactory, UserFactory
from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Booking
from labgpu.catalog.models import ProviderAccount
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.factories import NodeFactory
from labgpu.provisioning.tokens import bootstrap_token_for, hash_secret

pytestmark = pytest.mark.django_db


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.fixture
def dave(vision_lab):
    """Alice's labmate: a plain member of her lab."""
    user = UserFactory(username="dave")
    MembershipFactory(user=user, lab=vision_lab)
    return user


def book(client, pool, lab, start, **extra):
    body = {
        "pool": pool.pk,
        "lab": lab.pk,
        "start": start.isoformat(),
        "end": (start + timedelta(hours=2)).isoformat(),
        **extra,
    }
    response = client.post("/api/v1/bookings/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def run_node(booking_id: int, attempt: int = 1) -> tuple[Node, APIClient, dict]:
    """Provision a node for the booking as the lifecycle would, and let its agent bootstrap."""
    Booking.objects.filter(pk=booking_id).update(status="provisioning")
    node = NodeFactory(
        booking_id=booking_id,
        attempt=attempt,
        provider_account=ProviderAccount.objects.first(),
        provider_id="7",
        public_ip="192.0.2.7",
    )
    Node.objects.filter(pk=node.pk).update(
        bootstrap_token_hash=hash_secret(bootstrap_token_for(node.pk))
    )
    answer = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/")
    assert answer.status_code == 200, answer.content
    return node, bearer(answer.json()["heartbeat_token"]), answer.json()


def say(agent: APIClient, state: str) -> int:
    return agent.post("/api/v1/agent/notebook/", {"state": state}, format="json").status_code


def make_ready(node: Node) -> None:
    Node.objects.filter(pk=node.pk).update(status="ready", passed_at=now(), ready_at=now())
    Booking.objects.filter(pk=node.booking_id).update(status="ready")


def test_jupyter_is_asked_on_create_shown_on_read_and_off_by_default(
    as_alice, pool, vision_lab, quotas, tomorrow
):
    plain = book(as_alice, pool, vision_lab, tomorrow)
    notebook = book(as_alice, pool, vision_lab, tomorrow + timedelta(hours=4), jupyter=True)
    assert (plain["jupyter"], notebook["jupyter"]) == (False, True)
    assert as_alice.get(f"/api/v1/bookings/{notebook['id']}/").json()["jupyter"] is True
    bad = as_alice.post(
        "/api/v1/bookings/",
        {"pool": pool.pk, "lab": vision_lab.pk, "end": tomorrow.isoformat(), "jupyter": "maybe"},
        format="json",
    )
    assert bad.status_code == 400 and "jupyter" in bad.json()["extra"]["fields"]


def test_the_token_reaches_the_node_only_in_the_bootstrap_answer_and_only_when_asked(
    as_alice, pool, vision_lab, quotas, tomorrow
):
    plain = book(as_alice, pool, vision_lab, tomorrow)
    _node, _agent, answer = run_node(plain["id"])
    assert "notebook" not in answer

    asked = book(as_alice, pool, vision_lab, tomorrow + timedelta(hours=4), jupyter=True)
    node, _agent, answer = run_node(asked["id"])
    token = answer["notebook"]["token"]
    assert answer["notebook"]["port"] == 8888 and len(token) >= 32
    booking = Booking.objects.get(pk=asked["id"])
    # sealed at rest: the database row does not hold the token
    assert booking.notebook_token_sealed and token not in booking.notebook_token_sealed
    # a replacement node of the same booking gets the same token (the owner's URL stays valid)
    Node.objects.filter(pk=node.pk).update(status="failed")
    _second, _agent, again = run_node(asked["id"], attempt=2)
    assert again["notebook"]["token"] == token


def test_only_the_owner_gets_the_tunnel_and_the_url_once_ready(
    as_alice, as_bob, as_carol, as_mallory, dave, pool, vision_lab, quotas, tomorrow
):
    created = book(as_alice, pool, vision_lab, tomorrow, jupyter=True)
    url = f"/api/v1/bookings/{created['id']}/notebook/"
    node, agent, answer = run_node(created["id"])
    token = answer["notebook"]["token"]

    waiting = as_alice.get(url).json()
    assert (waiting["ready"], waiting["url"], waiting["tunnel_command"]) == (False, None, None)

    make_ready(node)
    assert say(agent, "running") == 204
    mine = as_alice.get(url + "?local_port=9999")
    assert mine.status_code == 200 and mine["Cache-Control"] == "no-store"
    assert mine.json() == {
        "state": "running",
        "ready": True,
        "local_port": 9999,
        "remote_port": 8888,
        "ssh_command": "ssh root@192.0.2.7",
        "tunnel_command": "ssh -N -L 9999:127.0.0.1:8888 root@192.0.2.7",
        "url": f"http://127.0.0.1:9999/lab?token={token}",
    }
    # labmates and the lab's admin see the booking but not its notebook; other labs not even that
    assert client_for(dave).get(url).json()["code"] == "not_booking_owner"
    assert as_bob.get(url).status_code == 403
    assert as_carol.get(url).status_code in (403, 404)
    assert as_mallory.get(url).status_code == 404
    bad_port = as_alice.get(url + "?local_port=80")
    assert bad_port.status_code == 400 and "local_port" in bad_port.json()["extra"]["fields"]


def test_the_token_is_never_in_lists_details_audit_feeds_or_logs(
    as_alice, as_bob, alice, pool, vision_lab, quotas, tomorrow, caplog
):
    caplog.set_level(logging.DEBUG)
    created = book(as_alice, pool, vision_lab, tomorrow, jupyter=True)
    node, agent, answer = run_node(created["id"])
    token = answer["notebook"]["token"]
    make_ready(node)
    say(agent, "running")
    assert token in as_alice.get(f"/api/v1/bookings/{created['id']}/notebook/").json()["url"]

    feed = as_alice.post("/api/v1/feeds/", {"kind": "user"}, format="json").json()
    seen = [
        as_alice.get("/api/v1/bookings/").content,
        as_bob.get("/api/v1/bookings/").content,
        as_alice.get(f"/api/v1/bookings/{created['id']}/").content,
        as_bob.get(f"/api/v1/bookings/{created['id']}/").content,
        as_alice.get("/api/v1/audit/").content,
        as_bob.get("/api/v1/audit/").content,
        APIClient().get(feed["url"]).content,
        json.dumps(list(AuditEvent.objects.values()), default=str).encode(),
    ]
    assert as_alice.get(f"/api/v1/bookings/{created['id']}/").json()["node"]["notebook_state"] == (
        "running"
    )
    for body in seen:
        assert token.encode() not in body
    assert token not in caplog.text


def test_agent_reports_notebook_state_only_for_a_booking_that_asked(
    as_alice, pool, vision_lab, quotas, tomorrow
):
    plain = book(as_alice, pool, vision_lab, tomorrow)
    _node, agent, _answer = run_node(plain["id"])
    refused = agent.post("/api/v1/agent/notebook/", {"state": "running"}, format="json")
    assert refused.status_code == 400 and refused.json()["code"] == "no_notebook"

    asked = book(as_alice, pool, vision_lab, tomorrow + timedelta(hours=4), jupyter=True)
    node, agent, _answer = run_node(asked["id"])
    bad = agent.post("/api/v1/agent/notebook/", {"state": "exploded"}, format="json")
    assert bad.status_code == 400 and "state" in bad.json()["extra"]["fields"]
    assert say(agent, "starting") == 204
    node.refresh_from_db()
    assert node.notebook_state == "starting"
    assert say(bearer("lgn_h_nope"), "failed") == 401

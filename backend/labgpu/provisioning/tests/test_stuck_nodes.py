"""A node stuck in a state says so, with the provider's last error, to its booking's owner and
to site admins, who can drive it on or destroy it from the app, audited (issue 14 bug 1)."""

from contextlib import nullcontext
from datetime import timedelta

import pytest

from conftest import client_for
from labgpu.accounts.tests.factories import MembershipFactory
from labgpu.audit.models import AuditEvent
from labgpu.core.models import OutboxMessage
from labgpu.core.timeutils import now
from labgpu.providers import ProviderTransientError
from labgpu.provisioning.models import Node
from labgpu.provisioning.services import nodes
from labgpu.provisioning.tests.factories import NodeFactory

pytestmark = pytest.mark.django_db


class Unreachable:
    """A provider nobody answers for (the demo's emulator on another port)."""

    def create(self, spec):  # type: ignore[no-untyped-def]
        raise ProviderTransientError("connection refused: http://127.0.0.1:8010/v2/droplets")


def unreachable(driver, spec, *, before_create):  # type: ignore[no-untyped-def]
    return driver.create(spec)


def test_a_node_the_provider_does_not_answer_for_shows_as_stuck_with_its_error(
    monkeypatch, settings
):
    settings.LABGPU_STUCK_AFTER_S = 120
    node = NodeFactory(status=Node.Status.REQUESTED, status_changed_at=now())
    monkeypatch.setattr(nodes, "driver_for", lambda account: nullcontext(Unreachable()))
    monkeypatch.setattr(nodes, "create_or_adopt", unreachable)
    monkeypatch.setattr(nodes, "_renew_lease", lambda node_id: lambda: None)
    for _ in range(2):  # the first try, then the task's retry
        with pytest.raises(ProviderTransientError):
            nodes.node_provision(node_id=node.pk)

    node.refresh_from_db()
    assert node.status == "creating"
    assert "connection refused" in node.last_error and node.last_error_at is not None
    assert not node.is_stuck  # creating for a moment only
    Node.objects.filter(pk=node.pk).update(status_changed_at=now() - timedelta(minutes=7))

    MembershipFactory(user=node.booking.user, lab=node.booking.lab)
    owner = client_for(node.booking.user).get(f"/api/v1/bookings/{node.booking_id}/").json()
    assert owner["node"]["stuck"] is True
    assert "connection refused" in owner["node"]["last_error"]


def test_site_admin_retries_and_destroys_a_stuck_node_audited(carol):
    node = NodeFactory(status=Node.Status.CREATING, last_error="HTTP 503")
    admin = client_for(carol)

    listed = admin.get("/api/v1/nodes/").json()["results"][0]
    assert listed["last_error"] == "HTTP 503" and "stuck" in listed

    queued = OutboxMessage.objects.count()
    retried = admin.post(f"/api/v1/nodes/{node.pk}/retry/")
    assert retried.status_code == 200, retried.content
    assert OutboxMessage.objects.count() == queued + 1
    assert AuditEvent.objects.filter(
        action="node.retry", actor=carol, target_id=str(node.pk)
    ).exists()

    destroyed = admin.post(f"/api/v1/nodes/{node.pk}/destroy/", {"reason": "stuck"}, format="json")
    assert destroyed.status_code == 200, destroyed.content
    node.refresh_from_db()
    assert node.status == "failed" and "carol" in node.failure_reason
    assert AuditEvent.objects.filter(action="node.destroy", actor=carol).exists()
    again = admin.post(f"/api/v1/nodes/{node.pk}/destroy/", {}, format="json")
    assert again.status_code == 409


def test_researchers_cannot_retry_or_destroy_nodes(alice):
    node = NodeFactory(status=Node.Status.CREATING)
    assert client_for(alice).post(f"/api/v1/nodes/{node.pk}/retry/").status_code in (403, 404)
    assert client_for(alice).post(f"/api/v1/nodes/{node.pk}/destroy/").status_code in (403, 404)

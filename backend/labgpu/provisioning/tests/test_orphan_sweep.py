"""The orphan sweep takes over exactly the steps no live worker holds: a free lease and an overdue
step. A held lease (a worker at work) or a step not yet due (queued, or a retry counting down) is
left alone; the end-to-end takeover is in test_crash_anywhere.py and test_scale_out.py."""

from datetime import timedelta

import pytest

from labgpu.bookings.tests.factories import BookingFactory
from labgpu.core.timeutils import now
from labgpu.provisioning import dispatch
from labgpu.provisioning.models import Node
from labgpu.provisioning.services import reconciliation
from labgpu.provisioning.tests.factories import NodeFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    published: list[tuple[str, int]] = []
    monkeypatch.setattr(
        dispatch.outbox,
        "publish_best_effort",
        lambda task, node_id: published.append((task.rsplit(".", 1)[1], node_id)) or True,
    )
    return published


def node_in(status: str, *, alice, vision_lab, pool, tomorrow, **fields) -> Node:
    start = tomorrow + timedelta(hours=Node.objects.count() * 2)  # one slot each
    booking = BookingFactory(lab=vision_lab, user=alice, pool=pool, start=start)
    return NodeFactory(booking=booking, status=status, **fields)


def test_only_steps_with_a_free_lease_and_past_due_are_run_again(
    sent, settings, alice, vision_lab, pool, tomorrow
):
    settings.LABGPU_STEP_GRACE_S = 8
    past, future = now() - timedelta(seconds=1), now() + timedelta(seconds=30)
    world = {"alice": alice, "vision_lab": vision_lab, "pool": pool, "tomorrow": tomorrow}
    orphan_create = node_in("requested", step_due_by=past, **world)
    orphan_teardown = node_in(
        "destroying", provider_id="77", step_due_by=past, lease_until=past, **world
    )
    node_in("creating", step_due_by=past, lease_until=future, lease_token="x", **world)  # at work
    node_in("draining", provider_id="78", step_due_by=future, **world)  # a retry counting down
    node_in("booting", provider_id="79", step_due_by=past, **world)  # no step pending: the poll's

    assert reconciliation.nodes_redrive_orphaned() == 2
    assert sorted(sent) == sorted(
        [("provision_node", orphan_create.pk), ("teardown_node", orphan_teardown.pk)]
    )
    # Each re-sent step is due again one grace later: the next sweep leaves it to the worker.
    orphan_create.refresh_from_db()
    assert orphan_create.step_due_by > now() + timedelta(seconds=7)
    assert reconciliation.nodes_redrive_orphaned() == 0

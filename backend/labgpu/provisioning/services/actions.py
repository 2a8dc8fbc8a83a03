"""What a site admin does to a node from the Nodes page: drive it on again, or destroy it.

Both are audited with the admin as actor. Neither bypasses the lifecycle: a retry enqueues the
same task the lifecycle would (safe to run twice), and a destroy fails the node, which tears it
down and gives the booking its replacement if it still may have one (I-5).
"""

from django.db import transaction
from django.utils.translation import gettext as _

from labgpu.accounts.models import User
from labgpu.audit.services import audit_record
from labgpu.core.errors import Conflict
from labgpu.core.reasons import reason as stored_reason
from labgpu.provisioning.dispatch import enqueue_on_commit
from labgpu.provisioning.models import Node
from labgpu.provisioning.services.nodes import node_fail

NodeStatus = Node.Status
RETRY_TASKS = {
    NodeStatus.REQUESTED: "provision_node",
    NodeStatus.CREATING: "provision_node",
    NodeStatus.DRAINING: "teardown_node",
    NodeStatus.DESTROYING: "teardown_node",
    NodeStatus.FAILED: "teardown_node",
}


@transaction.atomic
def node_retry(*, actor: User, node_id: int) -> Node:
    """Run the node's pending provider step again now (create, or destroy)."""
    node = Node.objects.select_related("booking__lab").get(pk=node_id)
    task = RETRY_TASKS.get(node.status)
    if task is None:
        raise Conflict(
            _(
                "This node is %(status)s: it has no provider step to retry; "
                "destroy it if it is stuck."
            )
            % {"status": node.get_status_display()},
            code="invalid_status",
        )
    enqueue_on_commit(task, node.pk)  # type: ignore[arg-type]
    audit_record(
        actor=actor,
        action="node.retry",
        target=node,
        lab=node.booking.lab,
        data={"status": node.status, "task": task, "last_error": node.last_error},
    )
    return node


def node_destroy(*, actor: User, node_id: int, reason: str = "") -> Node:
    """Give the node up and tear it down; its booking gets a replacement if it may."""
    why = (
        stored_reason(
            "Destroyed by site admin %(username)s: %(reason)s",
            username=actor.username,
            reason=reason,
        )
        if reason
        else stored_reason("Destroyed by site admin %(username)s.", username=actor.username)
    )
    with transaction.atomic():
        if not node_fail(node_id=node_id, reason=why):
            raise Conflict(_("This node is already being torn down."), code="invalid_status")
        node = Node.objects.select_related("booking__lab").get(pk=node_id)
        audit_record(
            actor=actor,
            action="node.destroy",
            target=node,
            lab=node.booking.lab,
            data={"reason": reason, "last_error": node.last_error},
        )
    return node

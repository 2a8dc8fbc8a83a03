"""Enqueue the lifecycle's tasks by name, so services never import the tasks that call them.

Tasks (provisioning/tasks.py) call services; services ask for follow-up work here, by the task's
name. `TaskName` lists the names, so a typo fails the type check, and
tests/test_dispatch.py proves each one is a registered task.
"""

from datetime import timedelta
from typing import Literal

from django.conf import settings

from labgpu.core import outbox
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node

TASKS_MODULE = "labgpu.provisioning.tasks"
# Both take the node's id first: dispatching one marks when its step is due (Node.step_due_by).
TaskName = Literal["provision_node", "teardown_node"]


def enqueue_on_commit(task_name: TaskName, node_id: int, *, countdown: float = 0) -> None:
    """Through the outbox: a broker that is away never fails the caller or loses the work."""
    step_due(node_id, countdown=countdown)
    outbox.enqueue_on_commit(f"{TASKS_MODULE}.{task_name}", node_id, countdown=countdown)


def redrive(task_name: TaskName, node_id: int) -> bool:
    """Publish now, without an outbox row, work that the orphan sweep re-drives anyway."""
    step_due(node_id)
    return outbox.publish_best_effort(f"{TASKS_MODULE}.{task_name}", node_id)


def step_due(node_id: int, *, countdown: float = 0) -> None:
    """The node's step is queued to start in `countdown` s: a worker should hold its lease by
    then plus LABGPU_STEP_GRACE_S (time in the queue), or the orphan sweep runs it again."""
    due = now() + timedelta(seconds=countdown + settings.LABGPU_STEP_GRACE_S)
    Node.objects.filter(pk=node_id).update(step_due_by=due)


# Both take the volume's id: a researcher's create or grow, run at the provider by a worker.
VolumeTaskName = Literal["create_volume", "resize_volume"]


def enqueue_volume_on_commit(task_name: VolumeTaskName, volume_id: int) -> None:
    outbox.enqueue_on_commit(f"{TASKS_MODULE}.{task_name}", volume_id)

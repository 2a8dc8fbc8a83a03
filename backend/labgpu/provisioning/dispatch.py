"""Enqueue the lifecycle's tasks by name, so services never import the tasks that call them.

Tasks (provisioning/tasks.py) call services; services ask for follow-up work here, by the task's
name. `TaskName` lists the names, so a typo fails the type check, and
tests/test_dispatch.py proves each one is a registered task.
"""

from typing import Literal

from labgpu.core import outbox

TASKS_MODULE = "labgpu.provisioning.tasks"
TaskName = Literal["provision_node", "teardown_node"]


def enqueue_on_commit(task_name: TaskName, *args: object, countdown: float = 0) -> None:
    """Through the outbox: a broker that is away never fails the caller or loses the work."""
    outbox.enqueue_on_commit(f"{TASKS_MODULE}.{task_name}", *args, countdown=countdown)


def redrive(task_name: TaskName, *args: object) -> bool:
    """Publish now, without an outbox row, work that the reconcile sweep re-drives anyway."""
    return outbox.publish_best_effort(f"{TASKS_MODULE}.{task_name}", *args)

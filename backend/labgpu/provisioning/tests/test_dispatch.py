"""Services enqueue the lifecycle's tasks by name (labgpu.provisioning.dispatch): every name they
may use must be a task the worker knows, or the work would be published and never run."""

from typing import get_args

from celery import current_app

from labgpu.provisioning import dispatch


def test_every_dispatchable_name_is_a_registered_task():
    current_app.loader.import_default_modules()  # autodiscovery, as a worker does at start
    names = [
        f"{dispatch.TASKS_MODULE}.{name}"
        for name in (*get_args(dispatch.TaskName), *get_args(dispatch.VolumeTaskName))
    ]
    assert names
    missing = [name for name in names if name not in current_app.tasks]
    assert not missing, missing

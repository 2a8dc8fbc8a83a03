"""Celery: put the task id on log lines and time each task for labgpu_task_duration_seconds."""

from __future__ import annotations

import time
from typing import Any

from celery.signals import task_postrun, task_prerun

from labgpu.ops.context import task_id_var, task_name_var
from labgpu.ops.metrics import TASK_LATENCY

_running: dict[str, tuple[float, Any, Any]] = {}


@task_prerun.connect(dispatch_uid="labgpu.ops.task_prerun")
def _task_started(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    if task_id is None:
        return
    tokens = (task_id_var.set(task_id), task_name_var.set(getattr(task, "name", None)))
    _running[task_id] = (time.perf_counter(), *tokens)


@task_postrun.connect(dispatch_uid="labgpu.ops.task_postrun")
def _task_finished(
    task_id: str | None = None, task: Any = None, state: str | None = None, **_: Any
) -> None:
    started = _running.pop(task_id or "", None)
    if started is None:
        return
    began, id_token, name_token = started
    TASK_LATENCY.labels(getattr(task, "name", "unknown"), state or "UNKNOWN").observe(
        time.perf_counter() - began
    )
    try:
        task_name_var.reset(name_token)
        task_id_var.reset(id_token)
    except ValueError:  # postrun ran in another context than prerun: just clear
        task_id_var.set(None)
        task_name_var.set(None)

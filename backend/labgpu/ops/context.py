"""The request id or Celery task id of the work this thread is doing, for logs and responses."""

from __future__ import annotations

from contextvars import ContextVar

request_id_var: ContextVar[str | None] = ContextVar("labgpu_request_id", default=None)
task_id_var: ContextVar[str | None] = ContextVar("labgpu_task_id", default=None)
task_name_var: ContextVar[str | None] = ContextVar("labgpu_task_name", default=None)

"""Structured logs: one JSON object per line with the request id or Celery task id attached.

Configured from settings.LOGGING (`labgpu.ops.logging.ContextFilter`, `JsonFormatter`)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from labgpu.ops.context import request_id_var, task_id_var, task_name_var

# Attributes every LogRecord has; anything else was passed with `extra=` and is kept.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


class ContextFilter(logging.Filter):
    """Adds `request_id`, `task_id` and `task_name` (None outside a request or task)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = request_id_var.get()
        if getattr(record, "task_id", None) is None:
            record.task_id = task_id_var.get()
        if getattr(record, "task_name", None) is None:
            record.task_name = task_name_var.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_") and value is not None:
                entry[key] = value
        if record.exc_info:
            # exc_text when a filter set it (labgpu.ops.redaction redacts the traceback).
            entry["exc_info"] = record.exc_text or self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str, ensure_ascii=False)

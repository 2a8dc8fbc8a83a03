"""The report: facts + findings + smoke results + verdict, and its one schema.

The backend imports `validate_report` from here, so the API and the agent can never disagree on
the shape.
"""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from labgpu_agent.checks import Finding, verdict_of
from labgpu_agent.facts import Facts
from labgpu_agent.smoke.base import SmokeResult

SCHEMA_VERSION = 1


class ReportValidationError(ValueError):
    """The report does not match report.schema.json; `path` says where."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(f"invalid agent report at {path or '<root>'}: {message}")
        self.path = path


@cache
def report_schema() -> dict[str, Any]:
    text = resources.files("labgpu_agent").joinpath("report.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def validate_report(data: Any) -> None:
    """Raise ReportValidationError unless `data` is a valid report (schema version 1)."""
    validator = jsonschema.Draft202012Validator(report_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        path = "/".join(str(part) for part in error.absolute_path)
        raise ReportValidationError(error.message, path)


def build_report(
    *,
    facts: Facts,
    findings: list[Finding],
    smoke: list[SmokeResult],
    profile: str | None,
    agent_version: str,
    hostname: str | None = None,
    fixture_profile: str | None = None,
    collected_at: datetime | None = None,
    required_smoke: list[str] | None = None,
    timing: dict[str, float] | None = None,
    deep: bool = False,
) -> dict[str, Any]:
    when = (collected_at or datetime.now(UTC)).astimezone(UTC)
    report = {
        "schema_version": SCHEMA_VERSION,
        "agent_version": agent_version,
        "profile": profile,
        "hostname": hostname or socket.gethostname(),
        "collected_at": when.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "mode": "fixture" if fixture_profile else "live",
        "fixture_profile": fixture_profile,
        "facts": facts.to_dict(),
        "findings": [f.to_dict() for f in findings],
        "smoke": [s.to_dict() for s in smoke],
        "verdict": verdict_of(findings),
        "required_smoke": list(required_smoke or []),
        "timing": dict(timing or {}),
        "deep": deep,
    }
    validate_report(report)
    return report

"""The report schema is defined once (report.schema.json) and validated on both ends."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import LOCAL_FIXTURES

import labgpu_agent
from labgpu_agent import ReportValidationError, validate_report

RECORDED = sorted((LOCAL_FIXTURES / "h200").glob("run*/check*.json"))


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_reports_recorded_on_the_h200_are_valid(path):
    report = json.loads(path.read_text())
    validate_report(report)
    assert report["verdict"] == "pass" and report["profile"] == "h200"


def test_the_backend_can_validate_through_the_package_root():
    assert labgpu_agent.validate_report is validate_report


def test_a_finding_with_an_unknown_severity_is_rejected_with_its_path():
    report = json.loads(RECORDED[-1].read_text())
    bad = copy.deepcopy(report)
    bad["findings"] = [
        {
            "id": "gpu.count",
            "severity": "critical",
            "message": "x",
            "evidence": {},
            "remediation": "",
        }
    ]
    with pytest.raises(ReportValidationError, match="findings/0/severity"):
        validate_report(bad)


@pytest.mark.parametrize("field", ["verdict", "facts", "collected_at", "schema_version"])
def test_a_report_missing_a_required_field_is_rejected(field):
    report = json.loads(RECORDED[-1].read_text())
    del report[field]
    with pytest.raises(ReportValidationError, match=field):
        validate_report(report)


def test_collected_at_must_be_utc():
    report = json.loads(RECORDED[-1].read_text())
    report["collected_at"] = "2026-11-29T22:08:32+01:00"
    with pytest.raises(ReportValidationError, match="collected_at"):
        validate_report(report)

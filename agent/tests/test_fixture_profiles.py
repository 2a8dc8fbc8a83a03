"""The shipped fixture profiles replay real-format outputs and give the documented verdicts."""

from __future__ import annotations

import pytest

from labgpu_agent.cli import assemble_report
from labgpu_agent.collect import fixture_profile_names, load_fixture_profile
from labgpu_agent.report import validate_report
from labgpu_agent.smoke import SMOKE_NAMES

REQUIRED = {
    "healthy-mi300x",
    "healthy-mi350x",
    "healthy-h200",
    "thermal-throttle",
    "driver-missing",
    "pcie-degraded",
    "ecc-errors",
    "wrong-gpu-count",
}


def test_all_required_profiles_ship_with_the_package():
    assert set(fixture_profile_names()) >= REQUIRED


@pytest.mark.parametrize("name", fixture_profile_names())
def test_profile_gives_its_documented_verdict_and_findings(name):
    profile = load_fixture_profile(name)
    assert profile.description and profile.fault, "every profile documents its fault"
    # As a node of a pool with the default setting: all four smoke tests are required.
    report = assemble_report(
        profile_name=None, fixture=profile, smoke_names=[], required_smoke=list(SMOKE_NAMES)
    )
    validate_report(report)
    found = {f["id"] for f in report["findings"] if f["severity"] != "info"}
    assert report["verdict"] == profile.expected_verdict
    assert found == set(profile.expected_findings)
    assert report["mode"] == "fixture" and report["fixture_profile"] == name


def test_fixture_smoke_results_come_from_the_recording_not_from_torch():
    report = assemble_report(
        profile_name=None, fixture=load_fixture_profile("healthy-h200"), smoke_names=[]
    )
    by_metric = {s["metric"]: s for s in report["smoke"]}
    assert by_metric["bf16_tflops"]["environment"]["device"] == "NVIDIA H200"
    assert by_metric["images_per_s"]["value"] > 1.0
    assert set(by_metric) == {
        "bf16_tflops",
        "copy_gb_per_s",
        "images_per_s",
        "tokens_per_s_batch1",
        "tokens_per_s_batch128",
    }


def test_healthy_h200_replays_the_recorded_gpu():
    report = assemble_report(
        profile_name=None, fixture=load_fixture_profile("healthy-h200"), smoke_names=[]
    )
    (gpu,) = report["facts"]["gpus"]
    assert gpu["model"] == "NVIDIA H200" and gpu["compute_capability"] == "9.0"
    assert report["facts"]["sources"]["lspci-nvidia"] == "missing"


def test_a_profile_can_be_checked_against_another_instance_type():
    report = assemble_report(
        profile_name="mi350x", fixture=load_fixture_profile("healthy-mi300x"), smoke_names=[]
    )
    found = {f["id"] for f in report["findings"]}
    assert {"gpu.model", "gpu.gfx_target", "gpu.vram"} <= found

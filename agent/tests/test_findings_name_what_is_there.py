"""Issue 23 item 4 and issue 28's inventory faults: a finding says what the node has and what the
pool expects, and its remediation fits the cause and the vendor.

Recordings: the real H200 (healthy-h200), the published 8x MI300X `amd-smi` default view (ROCm/
amdsmi CHANGELOG, ROCm 7.0.0 — tests/fixtures/published), and every shipped fixture profile.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import LOCAL_FIXTURES

from labgpu_agent.checks import check_deep_run, check_smoke, run_checks
from labgpu_agent.collect import facts_from_outputs, fixture_profile_names, load_fixture_profile
from labgpu_agent.facts import Diagnostic, InterconnectLink, ParseProblem, PcieLink
from labgpu_agent.parsers import parse
from labgpu_agent.profiles import PROFILES, get_profile
from labgpu_agent.smoke.base import SmokeResult
from labgpu_agent.stress import DeepRun

EIGHT_MI300X = (
    LOCAL_FIXTURES / "published" / "amd-smi" / "default_8x_mi300x_load_rocm7.0.0_changelog.txt"
)
SMOKE = ["matmul", "bandwidth", "sdxl", "llm"]
# What only the other vendor's remediation would mention.
FOREIGN = {
    "nvidia": re.compile(r"amdgpu|amd-smi|rocm|/dev/kfd|renderD|HIP_|ROCR_", re.IGNORECASE),
    "amd": re.compile(r"nvidia|CUDA_VISIBLE|cuda build|dcgmi", re.IGNORECASE),
}


def checked(fixture: str, profile: str):
    loaded = load_fixture_profile(fixture)
    return run_checks(facts_from_outputs(loaded.outputs), get_profile(profile), loaded.smoke, SMOKE)


def test_an_mi300x_pool_on_the_h200_says_so_instead_of_modprobe_amdgpu():
    findings = checked("healthy-h200", "mi300x")
    assert [(f.id, f.severity) for f in findings] == [("gpu.vendor_mismatch", "fail")]
    assert findings[0].message == "1× NVIDIA H200; this pool expects AMD MI300X."
    assert findings[0].evidence["found"] == [
        {"index": 0, "vendor": "nvidia", "model": "NVIDIA H200"}
    ]


def test_eight_published_mi300x_checked_as_h200x8_name_both_sides():
    facts = parse("amd-smi-default", EIGHT_MI300X.read_text())
    assert len(facts.gpus) == 8
    (finding,) = [f for f in run_checks(facts, get_profile("h200:8")) if f.severity == "fail"]
    assert finding.id == "gpu.vendor_mismatch"
    assert finding.message.endswith("; this pool expects 8× NVIDIA H200.")
    assert finding.message.startswith("8× ")


def test_one_gpu_short_says_found_n_minus_1_of_n():
    """The published eight MI300X with GPU 7 left out (as CUDA_VISIBLE_DEVICES one short would)."""
    facts = parse("amd-smi-default", EIGHT_MI300X.read_text())
    assert not [f for f in run_checks(facts, get_profile("mi300x:8")) if f.id == "gpu.count"]
    short = replace(facts, gpus=[g for g in facts.gpus if g.index != 7])
    (count,) = [f for f in run_checks(short, get_profile("mi300x:8")) if f.id == "gpu.count"]
    assert count.message.startswith("Found 7 of 8 GPUs: 7× ")
    assert count.message.endswith("this pool expects 8× AMD MI300X.")
    assert (count.evidence["found"], count.evidence["expected"]) == (7, 8)


def test_h200x8_on_the_recorded_h200_fails_clearly():
    (count,) = [f for f in checked("healthy-h200", "h200:8") if f.severity == "fail"]
    assert count.id == "gpu.count"
    assert count.message == "Found 1 of 8 GPUs: 1× NVIDIA H200; this pool expects 8× NVIDIA H200."


def test_no_gpu_visible_never_says_install_the_smoke_extra():
    no_gpu = SmokeResult(
        name="matmul",
        status="skipped",
        metric="bf16_tflops",
        unit="TFLOP/s",
        reason="PyTorch sees no GPU (torch.cuda.is_available() is False)",
    )
    for name in ("h200", "mi300x"):
        (finding,) = check_smoke([no_gpu], get_profile(name), required=["matmul"])
        assert "smoke extra" not in finding.remediation
        assert "sees no GPU" in finding.remediation
        assert not FOREIGN[get_profile(name).vendor].search(finding.remediation)


@pytest.mark.parametrize("fixture", fixture_profile_names())
@pytest.mark.parametrize("vendor", ["amd", "nvidia"])
def test_every_finding_code_fits_its_vendor(fixture, vendor):
    """Every recording, checked as a pool of each vendor: each finding has a remediation, and it
    names no tool, device node or driver of the other vendor."""
    profile = next(p for p in PROFILES.values() if p.vendor == vendor)
    loaded = load_fixture_profile(fixture)
    findings = run_checks(facts_from_outputs(loaded.outputs), profile, loaded.smoke, SMOKE)
    for finding in findings:
        assert finding.remediation, finding.id
        assert not FOREIGN[vendor].search(finding.remediation), (finding.id, finding.remediation)
        if finding.id == "gpu.vendor_mismatch":
            assert len(findings) == 1 or all(f.id.startswith("smoke.") for f in findings[1:])


CHECKS_SOURCE = (
    Path(__file__).resolve().parents[1] / "src" / "labgpu_agent" / "checks.py"
).read_text()


def finding_code_patterns() -> set[str]:
    """Every finding id checks.py can emit, as a regex (`smoke.{slug}.failed`: any slug)."""
    literal = re.findall(r'\bid="([a-z_.]+)"', CHECKS_SOURCE)
    formatted = re.findall(r'\bid=f"([^"]+)"', CHECKS_SOURCE)
    patterns = {re.escape(code) + (".+" if code.endswith(".") else "") for code in literal}
    patterns |= {
        ".+".join(re.escape(part) for part in re.split(r"\{[^}]+\}", code)) for code in formatted
    }
    return patterns


def faulted(facts, vendor: str):
    """One edited copy of a recorded node per fault no shipped profile shows (each edit named)."""
    gpu = facts.gpus[0]
    tool = "amd-smi-metric" if vendor == "amd" else "nvidia-smi-xml"
    kind = "xgmi" if vendor == "amd" else "nvlink"
    links = [
        InterconnectLink(kind=kind, gpu=g, link=n, state="up", width=8, errors=2)
        for g in (0, 1)
        for n in range(1)
    ]
    yield replace(facts, gpus=[replace(gpu, compute_capability="8.0", unreservable_pages=1)])
    yield replace(facts, kernel_release="5.4.0", environment={"HSA_OVERRIDE_THERMAL_LIMIT": "90"})
    yield replace(facts, device_nodes=[replace(n, accessible=False) for n in facts.device_nodes])
    yield replace(facts, diagnostics=[Diagnostic(tool="rvs", test="x gpu 0", result="fail")])
    yield replace(facts, parse_problems=[ParseProblem(tool=tool, reason="unknown", line="?")])
    yield replace(facts, pcie_links=[PcieLink(bdf=gpu.bdf, gen=5, width=16, fatal_error=True)])
    yield replace(facts, gpus=[gpu, replace(gpu, index=1)], interconnect=links)


def smoke_faults() -> list[SmokeResult]:
    return [
        SmokeResult(
            name="sdxl",
            status="skipped",
            metric="images_per_s",
            unit="images/s",
            reason="PyTorch sees no GPU (torch.cuda.is_available() is False)",
        ),
        SmokeResult(
            name="matmul", status="failed", metric="bf16_tflops", unit="TFLOP/s", reason="x"
        ),
        SmokeResult(
            name="bandwidth",
            status="passed",
            metric="copy_gb_per_s",
            unit="GB/s",
            value=100.0,
            baseline=4000.0,
        ),
    ]


def deep_faults() -> DeepRun:
    """`check --deep`'s own tests (labgpu_agent.stress) with every fault they judge."""
    run = DeepRun(status="failed", reason="burn: AcceleratorError: device-side assert")
    for metric, value in (
        ("bf16_tflops", 100.0),
        ("wrong_results", 2),
        ("temperature_c_max", 99.0),
        ("hbm_temperature_c_max", 99.0),
        ("sm_clock_mhz_median", 300.0),
    ):
        run.add("burn", 0, metric, value, "")
    run.add("burn", 0, "telemetry_samples", 10, "", throttle_reasons=["hw_thermal_slowdown"])
    run.add("hbm", 0, "mismatches", 5, "words", tested_gib=1)
    run.add("p2p", 0, "p2p_gb_per_s", 1.0, "GB/s", peer=1)
    return run


def test_every_finding_code_is_walked_and_its_remediation_fits_the_vendor():
    """Issue 23 item 4: every id checks.py can emit is produced here — by a shipped recording
    under either vendor's pool, or by an edited copy of a recording — and each remediation names
    only the node's vendor's tools. A new finding code with no case here fails the test."""
    produced: dict[str, str] = {}
    bases = {"amd": "healthy-mi300x", "nvidia": "healthy-h200"}
    for vendor, base in bases.items():
        two = get_profile(("mi300x" if vendor == "amd" else "h200") + ":2")
        one = get_profile("mi300x" if vendor == "amd" else "h200")
        facts = facts_from_outputs(load_fixture_profile(base).outputs)
        cases = [(f, two if len(f.gpus) == 2 else one) for f in faulted(facts, vendor)] + [
            (facts_from_outputs(load_fixture_profile(n).outputs), p)
            for n in fixture_profile_names()
            for p in PROFILES.values()
            if p.vendor == vendor
        ]
        held = replace(facts, gpus=[replace(facts.gpus[0], vram_used_mib=60_000.0)])
        cases.append((held, one))
        for case_facts, profile in cases:
            findings = run_checks(case_facts, profile, smoke_faults(), [*SMOKE, "llm"])
            findings += check_deep_run(deep_faults(), case_facts, two)
            for f in findings:
                assert f.remediation, f.id
                assert not FOREIGN[vendor].search(f.remediation), (vendor, f.id, f.remediation)
                produced.setdefault(f.id, vendor)
    missing = {
        pattern
        for pattern in finding_code_patterns()
        if not any(re.fullmatch(pattern, code) for code in produced)
    }
    assert missing == set()

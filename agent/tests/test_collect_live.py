"""Live collection runs the real tools; here they are stand-ins on PATH that print recordings."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from conftest import LOCAL_FIXTURES

from labgpu_agent.checks import run_checks
from labgpu_agent.collect import collect_deep, collect_live, facts_from_outputs
from labgpu_agent.profiles import get_profile

PROFILE_DIR = Path(__file__).resolve().parents[1] / "src/labgpu_agent/fixture_profiles/healthy-h200"


def fake_tool(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_live_collection_on_an_nvidia_node_reads_every_tool(tmp_path, monkeypatch):
    xml = PROFILE_DIR / "nvidia-smi-q-x.xml"
    csv = LOCAL_FIXTURES / "h200" / "captures" / "nvidia-smi-query.csv"
    fake_tool(tmp_path, "nvidia-smi", f'case "$1" in -q) cat "{xml}";; *) cat "{csv}";; esac\n')
    fake_tool(
        tmp_path,
        "dmesg",
        "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1\n",
    )
    fake_tool(tmp_path, "journalctl", "exit 0\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HSA_OVERRIDE_GFX_VERSION", "9.0.0")

    outputs = collect_live("nvidia")
    facts = facts_from_outputs(outputs)

    assert facts.sources["nvidia-smi-xml"] == "ok" and facts.sources["nvidia-smi-csv"] == "ok"
    assert facts.sources["dmesg"] == "ok"  # fell back to journalctl when dmesg was refused
    (gpu,) = facts.gpus
    assert gpu.model == "NVIDIA H200" and gpu.compute_capability == "9.0"
    assert facts.environment == {"HSA_OVERRIDE_GFX_VERSION": "9.0.0"}
    assert "amd-smi-static" not in outputs  # no AMD tools are run for an NVIDIA profile
    # On this test machine the device nodes do not exist, which the checks must say.
    found = {f.id for f in run_checks(facts, get_profile("h200"))}
    assert "devices.missing" in found and "gpu.count" not in found


def test_an_amd_profile_on_an_nvidia_node_reports_the_nvidia_gpu(tmp_path, monkeypatch):
    """Issue 23 item 4, live: an MI300X pool's agent on the recorded H200 (nvidia-smi the only
    GPU tool on PATH) lists the NVIDIA GPU and says so, instead of "modprobe amdgpu"."""
    csv = PROFILE_DIR / "nvidia-smi-query.csv"
    fake_tool(tmp_path, "nvidia-smi", f'cat "{csv}"\n')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")

    outputs = collect_live("amd")
    assert outputs["nvidia-smi-csv"].text  # the other vendor's listing, since its tool is there
    assert "nvidia-smi-xml" not in outputs
    findings = run_checks(facts_from_outputs(outputs), get_profile("mi300x"))
    assert [(f.id, f.message) for f in findings] == [
        ("gpu.vendor_mismatch", "1× NVIDIA H200; this pool expects AMD MI300X.")
    ]


def test_deep_on_an_amd_node_runs_each_rvs_module_with_its_platform_conf(tmp_path, monkeypatch):
    """A stand-in `rvs` prints AMD's published 8x MI355X output of the module `-m` names; the deep
    check keeps each GPU's numbers and RVS's own verdicts from every module."""
    published = LOCAL_FIXTURES / "published" / "rvs"
    fake_tool(
        tmp_path,
        "rvs",
        f'[ "$1" = -m ] || exit 2\ncat "{published}/$2"_8x_mi355x_rocm7.2.1_rvs_user_guide.txt '
        '2>/dev/null || { echo "no sample for $2"; exit 1; }\n',
    )
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")

    facts = facts_from_outputs(collect_deep("amd"))
    assert {n: facts.sources[n] for n in ("rvs-babel", "rvs-iet", "rvs-pebb", "rvs-pbqt")} == {
        "rvs-babel": "ok",
        "rvs-iet": "ok",
        "rvs-pebb": "ok",
        "rvs-pbqt": "ok",
    }
    assert facts.sources["rvs-gst"].startswith("exit 1")  # no MI355X gst sample in this folder
    tests = {m["test"] for m in facts.measurements}
    assert tests == {"babel", "iet", "pebb", "pbqt"}
    verdicts = {d.test for d in facts.diagnostics}
    assert "iet-stress-1400W-true gpu 51771" in verdicts and "pcie_h2d_bandwidth" in verdicts
    assert [f for f in run_checks(facts, get_profile("mi355x:8")) if f.id.startswith("deep.")] == []

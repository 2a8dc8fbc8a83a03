"""The command line as operators use it."""

from __future__ import annotations

import builtins
import json

from conftest import LOCAL_FIXTURES

from labgpu_agent.cli import main
from labgpu_agent.smoke import run_smoke


def test_parse_prints_normalised_facts(capsys):
    path = LOCAL_FIXTURES / "h200" / "captures" / "nvidia-smi-query.csv"
    assert main(["parse", "nvidia-smi-csv", str(path)]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["gpus"][0]["model"] == "NVIDIA H200"
    assert facts["gpus"][0]["compute_capability"] == "9.0"


def test_check_json_replays_a_fixture_profile_and_exits_by_verdict(capsys):
    assert main(["check", "--json", "--fixture-profile", "thermal-throttle"]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "fail" and report["profile"] == "mi300x"
    assert main(["check", "--fixture-profile", "healthy-mi350x"]) == 0
    assert "verdict: PASS" in capsys.readouterr().out


def test_unknown_profile_is_a_usage_error(capsys):
    assert main(["check", "--fixture-profile", "healthy-h200", "--profile", "a100"]) == 64
    assert "unknown profile" in capsys.readouterr().err


def test_smoke_without_torch_is_skipped_not_a_crash(monkeypatch, capsys):
    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name.split(".")[0] in ("torch", "diffusers", "transformers"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    for name in ("matmul", "bandwidth", "sdxl", "llm"):
        results = run_smoke(name, {})
        assert results and all(r.status == "skipped" for r in results)
        assert "PyTorch is not installed" in (results[0].reason or "")
    assert main(["smoke", "sdxl", "--json", "--profile", "h200"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["smoke"][0]["status"] == "skipped"
    assert [f["id"] for f in out["findings"]] == ["smoke.sdxl.skipped"]


def test_fixtures_lists_the_shipped_profiles(capsys):
    assert main(["fixtures"]) == 0
    assert "healthy-h200" in capsys.readouterr().out.split()

"""Where the DigitalOcean contract comes from: `$LABGPU_DO_OPENAPI` (GitHub CI's bundle of
github.com/digitalocean/openapi at a pinned commit), else ../shared/contracts; a test without it
skips saying so, and nothing in the repository is a copy of the spec."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from emulator import contract

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(autouse=True)
def _fresh_environment(monkeypatch):
    monkeypatch.delenv(contract.SPEC_ENV, raising=False)


def test_the_spec_path_comes_from_the_environment_variable_first(monkeypatch, tmp_path):
    bundled = tmp_path / "do-openapi.yaml"
    bundled.write_text("openapi: 3.0.0\n")
    monkeypatch.setenv(contract.SPEC_ENV, str(bundled))

    assert contract.spec_path() == bundled
    assert contract.unavailable_reason() is None


def test_without_the_variable_the_shared_contract_is_the_fallback(monkeypatch, tmp_path):
    monkeypatch.setenv("LABGPU_SHARED_DIR", str(tmp_path))

    assert contract.spec_path() == tmp_path / "contracts" / contract.SPEC_NAME


def test_a_missing_spec_skips_loudly_with_the_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("LABGPU_SHARED_DIR", str(tmp_path / "nowhere"))

    with pytest.raises(pytest.skip.Exception) as skipped:
        contract.require_contract()

    assert "NOT validated" in str(skipped.value) and str(tmp_path / "nowhere") in str(skipped.value)


def test_a_named_but_missing_spec_is_an_error_not_a_skip(monkeypatch, tmp_path):
    monkeypatch.setenv(contract.SPEC_ENV, str(tmp_path / "not-fetched.yaml"))

    with pytest.raises(contract.ContractMissing, match=r"not-fetched\.yaml"):
        contract.require_contract()


def test_ci_fetches_digitaloceans_spec_at_a_pinned_commit_and_points_the_tests_at_it():
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    steps = workflow["jobs"]["test"]["steps"]
    runs = [step.get("run", "") for step in steps]
    [fetch_index] = [i for i, run in enumerate(runs) if "digitalocean/openapi" in run]
    fetch = steps[fetch_index]
    first_make_test = next(i for i, run in enumerate(runs) if "make test" in run)

    assert re.fullmatch(r"[0-9a-f]{40}", fetch["env"]["DO_OPENAPI_COMMIT"])
    assert "@redocly/cli@" in fetch["run"] and " bundle " in fetch["run"]
    assert f"{contract.SPEC_ENV}=" in fetch["run"] and "GITHUB_ENV" in fetch["run"]
    assert fetch_index < first_make_test


def test_no_copy_of_the_spec_is_committed():
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout.split()
    offenders = []
    for name in tracked:
        if not name.endswith((".yaml", ".yml", ".json")) or name == "backend/openapi.yaml":
            continue
        head = (REPO / name).read_text(errors="replace")[:4000]
        if "api.digitalocean.com" in head and "openapi" in head:
            offenders.append(name)
    assert offenders == []

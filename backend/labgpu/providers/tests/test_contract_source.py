"""Where the DigitalOcean contract comes from: `$LABGPU_DO_OPENAPI` (GitHub CI's bundle of
github.com/digitalocean/openapi at a pinned commit), else ../shared/contracts; a test without it
skips saying so, and nothing in the repository is a copy of the spec."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from emulator import contract

REPO = Path(__file__).resolve().parents[4]
BACKEND = REPO / "backend"
TESTS = "labgpu/providers/tests"
# Driver behaviour that needs no spec (the issue names these): they must run without ../shared.
BEHAVIOUR_TESTS = [
    f"{TESTS}/test_digitalocean.py::test_429_storm_is_waited_out_honouring_retry_after",
    f"{TESTS}/test_digitalocean.py::test_rate_limited_create_is_retried_and_makes_exactly_one_droplet",
    f"{TESTS}/test_digitalocean.py::test_5xx_after_the_droplet_was_made_raises_ambiguous_create_and_is_never_resent",
    f"{TESTS}/test_digitalocean.py::test_create_timeout_is_ambiguous_and_the_droplet_can_be_found_by_tag",
    f"{TESTS}/test_digitalocean.py::test_destroy_while_a_long_create_event_runs_goes_up_as_a_pending_event",
]  # fmt: skip


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


@pytest.mark.slow
def test_without_the_shared_dir_behaviour_tests_run_and_contract_tests_skip_loudly(tmp_path):
    """A checkout without ../shared (a fresh clone elsewhere): the driver's behaviour tests run,
    their validation off, the contract tests skip, and the run ends with one red line saying so."""
    report = tmp_path / "junit.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", contract.SPEC_ENV))}
    env["LABGPU_SHARED_DIR"] = str(tmp_path / "no-shared")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
         *BEHAVIOUR_TESTS, f"{TESTS}/test_contract.py"],
        cwd=BACKEND, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    outcomes: dict[str, list[str]] = {"passed": [], "skipped": [], "failed": []}
    for case in ET.parse(report).iter("testcase"):
        kind = (
            next((c.tag for c in case if c.tag in ("skipped", "failure", "error")), "passed")
            .replace("failure", "failed")
            .replace("error", "failed")
        )
        outcomes[kind].append(f"{case.get('classname')}::{case.get('name')}")
    assert len(outcomes["passed"]) == len(BEHAVIOUR_TESTS), outcomes
    assert all(".test_digitalocean::" in name for name in outcomes["passed"]), outcomes
    assert outcomes["skipped"] and all(".test_contract::" in n for n in outcomes["skipped"])
    assert outcomes["failed"] == []
    summary = [line for line in result.stdout.splitlines() if "validation OFF" in line]
    assert len(summary) == 1, result.stdout[-3000:]
    assert f"{len(BEHAVIOUR_TESTS)} test(s) ran with its validation OFF" in summary[0]
    assert f"{len(outcomes['skipped'])} contract test(s) SKIPPED" in summary[0]

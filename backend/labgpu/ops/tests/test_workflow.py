""".github/workflows/ci.yml mirrors .ci/run: service containers, lint, `make test` on PostgreSQL,
then the proof that the embedded default serves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[4]
WORKFLOW = REPO / ".github" / "workflows" / "ci.yml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def runs(job: dict) -> list[str]:
    return [step.get("run", "") for step in job["steps"]]


def test_the_workflow_runs_on_push_and_pull_requests(workflow):
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1: `on` is True
    assert "push" in triggers and "pull_request" in triggers
    assert set(workflow["jobs"]) >= {"lint", "test"}
    for job in workflow["jobs"].values():
        assert job["runs-on"].startswith("ubuntu")
        assert job["timeout-minutes"] <= 90
        assert job["steps"][0]["uses"].startswith("actions/checkout@")


def test_services_are_postgres_and_redis_with_health_options(workflow):
    services = workflow["jobs"]["test"]["services"]
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["redis"]["image"].startswith("redis:")
    for service in services.values():
        options = service["options"]
        assert "--health-cmd" in options and "--health-interval" in options
        assert "--health-retries" in options
    assert "5432:5432" in services["postgres"]["ports"]
    assert "6379:6379" in services["redis"]["ports"]


def test_lint_covers_ruff_schema_drift_eslint_and_vue_tsc(workflow):
    lint = "\n".join(runs(workflow["jobs"]["lint"]))
    assert "make lint" in lint  # ruff, makemigrations --check, schema drift (Makefile)
    assert "npm run lint" in lint  # ESLint and vue-tsc (frontend/package.json)
    makefile = (REPO / "Makefile").read_text()
    assert "ruff check" in makefile and "diff -u backend/openapi.yaml" in makefile
    package = (REPO / "frontend" / "package.json").read_text()
    assert "eslint" in package and "vue-tsc" in package


def test_make_test_runs_once_on_postgresql_then_the_embedded_default_is_proven(workflow):
    steps = workflow["jobs"]["test"]["steps"]
    make_tests = [step for step in steps if "make test" in step.get("run", "")]
    assert len(make_tests) == 1
    assert make_tests[0]["env"]["DATABASE_URL"].startswith("postgres://")
    assert make_tests[0]["env"]["REDIS_URL"].startswith("redis://")
    proofs = [step for step in steps if ".ci/prove-embedded.sh" in step.get("run", "")]
    assert len(proofs) == 1 and "env" not in proofs[0]
    assert steps.index(make_tests[0]) < steps.index(proofs[0])
    ci_run = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    runs_make_test = [i for i, line in enumerate(ci_run) if line.startswith("make test")]
    assert len(runs_make_test) == 1
    assert runs_make_test[0] < ci_run.index(".ci/prove-embedded.sh")


def test_ci_reruns_the_environment_dependent_tests_without_database_url_or_redis_url(workflow):
    """The README's `make test` on a fresh machine: CI's main pass has both services, so the tests
    whose path depends on them run again without (.ci/fresh-machine.sh), in .ci/run and here."""
    script = (REPO / ".ci" / "fresh-machine.sh").read_text()
    assert "unset DATABASE_URL REDIS_URL" in script
    listed = re.findall(r"^\s+(labgpu/\S+\.py)", script, flags=re.M)
    assert "labgpu/api/tests/test_throttling.py" in listed
    for path in listed:
        assert (REPO / "backend" / path).is_file(), path
    ci_run = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    make_test = next(i for i, line in enumerate(ci_run) if line.startswith("make test"))
    assert make_test < ci_run.index(".ci/fresh-machine.sh") < ci_run.index(".ci/prove-embedded.sh")
    steps = runs(workflow["jobs"]["test"])
    [fresh] = [i for i, run in enumerate(steps) if ".ci/fresh-machine.sh" in run]
    assert next(i for i, run in enumerate(steps) if "make test" in run) < fresh


def test_the_embedded_proof_runs_make_run_without_a_database_url_and_waits_for_readyz():
    proof = (REPO / ".ci" / "prove-embedded.sh").read_text()
    assert "unset DATABASE_URL REDIS_URL" in proof
    assert "make run" in proof and "/readyz" in proof and "make db-stop" in proof
    assert "sqlite" not in (REPO / "Makefile").read_text().lower()


def test_browser_tests_use_the_distributions_chromium(workflow):
    text = "\n".join(runs(workflow["jobs"]["test"]))
    assert "apt-get install" in text and "chromium" in text
    assert "npm run test:e2e" in text
    assert "playwright install" not in text  # never a downloaded browser build

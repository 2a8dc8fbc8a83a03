"""docker-compose.yml, backend/Dockerfile and .env.example, checked without a Docker engine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[4]
COMPOSE = REPO / "docker-compose.yml"
ENV_EXAMPLE = REPO / ".env.example"
DOCKERFILE = REPO / "backend" / "Dockerfile"
# Read only by tests and local runs; a deployment must not set them.
TEST_ONLY_VARS = {"LABGPU_TIME_SCALE", "LABGPU_TASKS_EAGER", "LABGPU_IDLE_MINUTE_S"}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def env_example_names() -> set[str]:
    names = set()
    for line in ENV_EXAMPLE.read_text().splitlines():
        match = re.match(r"^([A-Z][A-Z0-9_]*)=", line)
        if match:
            names.add(match.group(1))
    return names


def variables_read_by(path: Path) -> set[str]:
    text = path.read_text()
    patterns = (
        r"os\.environ\.get\(\s*\"([A-Z][A-Z0-9_]*)\"",
        r"os\.environ\[\s*\"([A-Z][A-Z0-9_]*)\"\s*\]",
        r"env_(?:bool|list)\(\s*\"([A-Z][A-Z0-9_]*)\"",
    )
    return {name for pattern in patterns for name in re.findall(pattern, text)}


def test_the_production_stack_has_every_service(compose):
    services = compose["services"]
    assert {"postgres", "redis", "web", "worker", "beat", "emulator"} <= set(services)
    for name, service in services.items():
        assert service.get("image") or service.get("build"), name
    for name in ("web", "worker", "beat", "migrate"):
        assert services[name]["build"]["dockerfile"] == "backend/Dockerfile"
        assert services[name]["env_file"] == ".env"
    assert services["emulator"]["profiles"] == ["emulator"]
    assert "profiles" not in services["web"]


def test_web_serves_gunicorn_and_worker_and_beat_are_separate(compose):
    services = compose["services"]
    web = " ".join(services["web"]["command"])
    assert "gunicorn config.wsgi" in web
    worker = services["worker"]["command"]
    assert worker[:4] == ["celery", "-A", "config", "worker"]
    assert not any(arg.startswith(("--beat", "-B")) for arg in worker), "beat runs in `beat`"
    assert services["beat"]["command"][:4] == ["celery", "-A", "config", "beat"]


def test_every_long_running_service_has_a_healthcheck(compose):
    for name, service in compose["services"].items():
        if name == "migrate":
            continue
        check = service.get("healthcheck")
        assert check and check.get("test") and not check.get("disable"), name
        assert check.get("interval"), name
    assert "/readyz" in " ".join(compose["services"]["web"]["healthcheck"]["test"])


def test_dependencies_wait_for_healthy_services_and_migrations(compose):
    services = compose["services"]
    for name in ("web", "worker", "beat"):
        depends = services[name]["depends_on"]
        assert depends["postgres"] == {"condition": "service_healthy"}, name
        assert depends["redis"] == {"condition": "service_healthy"}, name
        assert depends["migrate"] == {"condition": "service_completed_successfully"}, name
    assert services["migrate"]["command"][-2:] == ["migrate", "--noinput"]


def test_state_lives_in_named_volumes(compose):
    declared = set(compose["volumes"])
    assert {"postgres-data", "redis-data", "beat-data", "metrics-data"} <= declared
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            assert source in declared, f"{name} mounts {source}, not a named volume"
    assert "postgres-data:/var/lib/postgresql/data" in compose["services"]["postgres"]["volumes"]


def test_every_variable_the_settings_read_is_provided(compose):
    read = variables_read_by(REPO / "backend" / "config" / "settings.py") | variables_read_by(
        REPO / "backend" / "labgpu" / "providers" / "__init__.py"
    )
    assert {"DJANGO_SECRET_KEY", "DATABASE_URL", "REDIS_URL"} <= read  # the scan works
    provided = env_example_names()
    for service in compose["services"].values():
        provided |= set(service.get("environment") or {})
    dockerfile_env = set(re.findall(r"\b([A-Z][A-Z0-9_]*)=", DOCKERFILE.read_text()))
    missing = read - provided - dockerfile_env - TEST_ONLY_VARS
    assert not missing, f"read by the settings but not in .env.example or compose: {missing}"


def test_the_env_example_names_the_provider_tokens_and_production_mode():
    names = env_example_names()
    assert {
        "LABGPU_PROVIDER_TOKEN_DIGITALOCEAN",
        "LABGPU_PROVIDER_TOKEN_EMULATOR",
        "LABGPU_PRODUCTION",
    } <= names
    lines = ENV_EXAMPLE.read_text().splitlines()
    values = dict(line.split("=", 1) for line in lines if re.match(r"^[A-Z]", line))
    assert values["LABGPU_PROVIDER_TOKEN_DIGITALOCEAN"] == "", "never commit a real token"
    assert values["LABGPU_PRODUCTION"] == "1"


def test_compose_interpolations_are_in_the_env_example(compose):
    used = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", COMPOSE.read_text()))
    assert not used - env_example_names()


def test_the_dockerfile_is_multi_stage_and_runs_unprivileged():
    text = DOCKERFILE.read_text()
    stages = re.findall(r"^FROM \S+(?: AS (\w+))?", text, flags=re.MULTILINE)
    assert len(stages) >= 3 and {"frontend", "python", "runtime"} <= set(stages)
    assert "npm run build" in text and "COPY --from=frontend" in text
    assert re.search(r"^USER (?!root)\w+", text, flags=re.MULTILINE)
    assert "collectstatic" in text


def test_gunicorn_finds_its_config_wherever_it_is_started():
    """gunicorn reads ./gunicorn.conf.py (JSON error pages, redacted access log): the Procfile
    starts it in backend/, the image in /app, which is backend/ copied."""
    assert (REPO / "backend" / "gunicorn.conf.py").is_file()
    dockerfile = DOCKERFILE.read_text()
    assert "COPY backend/ /app/" in dockerfile and "WORKDIR /app" in dockerfile
    assert '"gunicorn", "config.wsgi"' in dockerfile
    assert "gunicorn config.wsgi" in (REPO / "backend" / "Procfile").read_text()

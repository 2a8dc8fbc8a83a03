"""Issue 11 items 1 and 5: a node's owner holds its agent token, so reports are hostile input.

Reports are bounded (finite numbers in physical ranges, sizes, storable strings, real dates), and
baselines survive anything stored: one vote per node, one weight per lab, bounded values only.
"""

import copy
import json

import pytest
from django.db import DataError, IntegrityError, transaction
from rest_framework.test import APIClient

from labgpu.accounts.tests.factories import LabFactory
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.catalog.models import ProviderAccount
from labgpu.health.models import HealthReport
from labgpu.health.selectors import instance_type_baselines
from labgpu.health.tests.test_agent_api import OTHER_REQUIRED_SMOKE
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.factories import NodeFactory
from labgpu.provisioning.tokens import bootstrap_token_for, hash_secret

pytestmark = pytest.mark.django_db


def make_node(pool, lab, user, start, status="completed"):
    # Nodes of past bookings (a completed booking holds no slot); the agent's node is live.
    booking = BookingFactory(lab=lab, user=user, pool=pool, start=start, status=status)
    node = NodeFactory(
        booking=booking,
        provider_account=ProviderAccount.objects.first(),
        provider_id="7",
        public_ip="192.0.2.7",
    )
    Node.objects.filter(pk=node.pk).update(
        bootstrap_token_hash=hash_secret(bootstrap_token_for(node.pk))
    )
    return node


@pytest.fixture
def node(alice, vision_lab, pool, tomorrow):
    return make_node(pool, vision_lab, alice, tomorrow, status="provisioning")


@pytest.fixture
def agent(node):
    heartbeat = APIClient()
    heartbeat.credentials(HTTP_AUTHORIZATION=f"Bearer {bootstrap_token_for(node.pk)}")
    token = heartbeat.post("/api/v1/agent/bootstrap/").json()["heartbeat_token"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def report(value=700.0, **changes):
    body = {
        "schema_version": 1,
        "agent_version": "0.1.0",
        "profile": "mi300x",
        "hostname": "n1",
        "collected_at": "2030-01-01T00:00:00Z",
        "facts": {"gpus": [{"index": 0, "temperature_hotspot_c": 41.0}]},
        "verdict": "pass",
        "findings": [],
        "smoke": [
            {
                "name": "matmul",
                "status": "passed",
                "metric": "bf16_tflops",
                "value": value,
                "unit": "TFLOP/s",
                "baseline": 600.0,
                "duration_s": 1.0,
            },
            *OTHER_REQUIRED_SMOKE,
        ],
    }
    body.update(changes)
    return body


def nested(levels: int) -> dict:
    """{"k0": {"k1": … {"k<levels-1>": 1}}}: a report that nests deeper than real ones do."""
    value: object = 1
    for level in reversed(range(levels)):
        value = {f"k{level}": value}
    return value  # type: ignore[return-value]


def post_raw(client, text: str):
    return client.generic(
        "POST", "/api/v1/agent/reports/", text.encode("utf-8"), content_type="application/json"
    )


def assert_refused(response, node):
    assert response.status_code == 400, response.content
    body = response.json()
    refusals = {"invalid_report", "number_out_of_range", "parse_error", "too_deeply_nested"}
    assert body["code"] in refusals | {"request_too_large"}, body
    assert set(body) == {"message", "code", "extra"}
    assert HealthReport.objects.filter(node=node).count() == 0
    node.refresh_from_db()
    assert node.status == "checking"


READ_ENDPOINTS = ["/api/v1/pools/", "/api/v1/instance-types/"]


def read_everything(client, pool, node):
    paths = [
        *READ_ENDPOINTS,
        f"/api/v1/pools/{pool.pk}/",
        f"/api/v1/instance-types/{pool.instance_type_id}/",
        f"/api/v1/instance-types/{pool.instance_type_id}/health/",
        f"/api/v1/nodes/{node.pk}/health/",
    ]
    return {path: client.get(path) for path in paths}


# --- item 1: one node poisons the service --------------------------------------------------------


@pytest.mark.parametrize("value", [1.7e308, -1.7e308, 1e16, 60_000.0, -1.0])
def test_report_with_out_of_range_smoke_value_is_refused(agent, node, value):
    response = agent.post("/api/v1/agent/reports/", report(value=value), format="json")
    assert_refused(response, node)
    assert response.json()["extra"]["path"] == "smoke/0/value"


def test_report_with_infinite_value_cannot_break_pool_list(agent, node, as_alice, pool):
    response = post_raw(agent, json.dumps(report()).replace("700.0", "1e400"))
    assert_refused(response, node)
    for path, answer in read_everything(as_alice, pool, node).items():
        assert answer.status_code == 200, (path, answer.content)


@pytest.mark.parametrize(
    ("path", "change"),
    [
        ("smoke/0/unit", lambda r: r["smoke"][0].update(unit="mTFLOP/s")),
        ("smoke/0/baseline", lambda r: r["smoke"][0].update(baseline=1e300)),
        ("smoke/0/duration_s", lambda r: r["smoke"][0].update(duration_s=1e12)),
        (
            "facts/gpus/0/temperature_hotspot_c",
            lambda r: r["facts"]["gpus"][0].update(temperature_hotspot_c=5000.0),
        ),
        ("facts/gpus/0/power_draw_w", lambda r: r["facts"]["gpus"][0].update(power_draw_w=-3.0)),
        ("facts/sources/x", lambda r: r["facts"].update(sources={"x": "a" * 9000})),
        ("facts/kernel_log_errors", lambda r: r["facts"].update(kernel_log_errors=["e"] * 2000)),
        (
            "facts/environment",
            lambda r: r["facts"].update(environment={f"K{i}": "v" for i in range(300)}),
        ),
        (
            "findings/0/evidence/k0/k1/k2/k3/k4/k5/k6/k7/k8",
            lambda r: r.update(
                findings=[
                    {
                        "id": "x.y",
                        "severity": "info",
                        "message": "m",
                        "remediation": "",
                        "evidence": nested(10),
                    }
                ]
            ),
        ),
    ],
)
def test_report_outside_physical_and_size_bounds_is_refused(agent, node, path, change):
    body = report()
    change(body)
    response = agent.post("/api/v1/agent/reports/", body, format="json")
    assert_refused(response, node)
    assert response.json()["extra"]["path"].startswith(path), response.json()
    assert path.split("/")[0] in str(response.json()["extra"]["fields"])


def test_I9_report_body_over_the_size_limit_is_refused(agent, node):
    body = report()
    body["facts"]["sources"] = {f"k{i}": "x" * 8000 for i in range(40)}  # ~320 KB
    assert_refused(agent.post("/api/v1/agent/reports/", body, format="json"), node)


def test_a_real_fixture_report_is_still_accepted(agent, node):
    import subprocess
    import sys

    from labgpu_agent.cli import main  # noqa: F401  (the agent is installed with the backend)

    produced = subprocess.run(
        [
            sys.executable,
            "-m",
            "labgpu_agent",
            "check",
            "--json",
            "--fixture-profile",
            "healthy-mi300x",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    body = json.loads(produced.stdout)
    response = agent.post("/api/v1/agent/reports/", body, format="json")
    assert response.status_code == 201, response.content
    node.refresh_from_db()
    assert node.status == "ready"


def store(node, pool, smoke, verdict="pass"):
    return HealthReport.objects.create(
        node=node,
        instance_type=pool.instance_type,
        verdict=verdict,
        collected_at=node.created_at,
        smoke=smoke,
    )


def matmul(value, unit="TFLOP/s", **extra):
    return {
        "name": "matmul",
        "status": "passed",
        "metric": "bf16_tflops",
        "value": value,
        "unit": unit,
        "baseline": None,
        "duration_s": 1.0,
        **extra,
    }


POISON = [
    [matmul(1.7e308)],
    [matmul(1.7e308), matmul(1.7e308)],
    [matmul(-1.7e308)],
    [matmul("700")],
    [matmul(True)],
    [matmul(None)],
    [matmul({"nested": [1, 2]})],
    [matmul(1e9, unit="TFLOPS")],
    [{"name": ["matmul"], "status": "passed", "value": 1.0}],
    ["not an object", 7, None],
    {"smoke": "as an object"},
    "a string",
]


def test_I9_poisoned_rows_written_straight_into_the_db_break_no_read_endpoint(
    alice, vision_lab, as_alice, as_carol, pool, tomorrow
):
    honest = make_node(pool, vision_lab, alice, tomorrow)
    store(honest, pool, [matmul(640.0)])
    for smoke in POISON:
        store(make_node(pool, vision_lab, alice, tomorrow), pool, smoke)
    last = make_node(pool, vision_lab, alice, tomorrow)
    store(last, pool, [matmul(660.0), matmul(1.7e308)])
    try:  # PostgreSQL's jsonb refuses Infinity/NaN; if it ever
        # stored them, the reads below must still answer (rendered as null).
        with transaction.atomic():
            store(last, pool, [matmul(float("inf")), matmul(float("nan"))])
    except (DataError, IntegrityError, ValueError):
        pass
    for client in (as_alice, as_carol):
        for path, answer in read_everything(client, pool, last).items():
            assert answer.status_code == 200, (path, answer.content)
    baseline = instance_type_baselines(pool.instance_type)["matmul:bf16_tflops"]
    assert 640.0 <= baseline["median"] <= 660.0
    listed = as_alice.get("/api/v1/pools/").json()["results"][0]
    assert listed["instance_type_detail"]["baselines"]["matmul:bf16_tflops"] == baseline


def test_one_node_reporting_many_times_is_one_vote(alice, vision_lab, pool, tomorrow):
    for value in (600.0, 620.0, 640.0):
        store(make_node(pool, vision_lab, alice, tomorrow), pool, [matmul(value)])
    loud = make_node(pool, vision_lab, alice, tomorrow)
    for _ in range(60):  # more reports than the window has nodes
        store(loud, pool, [matmul(49_000.0)])
    baseline = instance_type_baselines(pool.instance_type)["matmul:bf16_tflops"]
    assert baseline["samples"] == 4
    assert baseline["median"] == 620.0


def test_I9_one_lab_with_many_nodes_cannot_dominate_the_baseline(
    alice, mallory, vision_lab, other_lab, pool, tomorrow
):
    third = LabFactory(name="Third Lab", slug="third")
    store(make_node(pool, vision_lab, alice, tomorrow), pool, [matmul(640.0)])
    store(make_node(pool, third, alice, tomorrow), pool, [matmul(660.0)])
    for _ in range(20):  # mallory's lab books twenty nodes and reports a wild value from each
        store(make_node(pool, other_lab, mallory, tomorrow), pool, [matmul(49_000.0)])
    baseline = instance_type_baselines(pool.instance_type)["matmul:bf16_tflops"]
    assert baseline["median"] == 660.0  # within the honest labs' range
    assert baseline["samples"] == 22


# --- item 5: malformed reports are 400, never 500 -------------------------------------------------


@pytest.mark.parametrize(
    "collected_at",
    [
        "2026-13-45T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "0000-01-01T00:00:00Z",
        "2026-01-01T25:00:00Z",
        "２０２６-01-01T00:00:00Z",
        "2026-01-01T00:00:00.1234567Z",
        "9999-12-31T23:59:59Z",
        "1900-01-01T00:00:00Z",
    ],
)
def test_report_with_an_impossible_date_is_a_400(agent, node, collected_at):
    response = agent.post(
        "/api/v1/agent/reports/", report(collected_at=collected_at), format="json"
    )
    assert_refused(response, node)
    assert response.json()["extra"]["path"] == "collected_at"


@pytest.mark.parametrize(
    ("field", "value"),
    [("agent_version", "1." * 20), ("profile", "p" * 65), ("hostname", "h" * 300)],
)
def test_report_with_over_long_column_values_is_a_400(agent, node, field, value):
    response = agent.post("/api/v1/agent/reports/", report(**{field: value}), format="json")
    assert_refused(response, node)
    assert response.json()["extra"]["path"] == field


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r.update(agent_version="0.1\x00"),
        lambda r: r["facts"].update(environment={"A\x00B": "x"}),
        lambda r: r["facts"].update(kernel_log_errors=["bad \x00 line"]),
        lambda r: r["facts"].update(kernel_log_errors=["\ud800 lone surrogate"]),
    ],
)
def test_report_with_nul_or_unstorable_text_is_a_400(agent, node, change):
    body = report()
    change(body)
    response = post_raw(agent, json.dumps(body))  # json.dumps escapes them as \\u0000, \\ud800
    assert_refused(response, node)


def test_report_with_1e400_smoke_value_is_a_400(agent, node):
    text = json.dumps(report()).replace("700.0", "1e400")
    assert_refused(post_raw(agent, text), node)
    nan = json.dumps(report()).replace("700.0", "NaN")
    assert_refused(post_raw(agent, nan), node)


def test_report_that_is_not_an_object_is_a_400(agent, node):
    for text in ("[]", '"report"', "7", "null", json.dumps([report()])):
        assert_refused(post_raw(agent, text), node)


def test_deeply_nested_report_is_a_400(agent, node):
    body = copy.deepcopy(report())
    text = json.dumps(body).replace('"findings": []', '"findings": ' + "[" * 50_000 + "]" * 50_000)
    assert_refused(post_raw(agent, text), node)

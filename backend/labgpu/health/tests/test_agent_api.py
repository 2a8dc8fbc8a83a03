"""The agent's side of the API: node-scoped tokens, schema-checked reports, baselines."""

import pytest
from rest_framework.test import APIClient

from labgpu.bookings.tests.factories import BookingFactory
from labgpu.catalog.models import ProviderAccount
from labgpu.core.timeutils import now
from labgpu.health.models import HealthReport
from labgpu.health.selectors import instance_type_baselines
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.factories import NodeFactory
from labgpu.provisioning.tokens import bootstrap_token_for, hash_secret

pytestmark = pytest.mark.django_db


@pytest.fixture
def node(alice, vision_lab, pool, tomorrow):
    booking = BookingFactory(
        lab=vision_lab, user=alice, pool=pool, start=tomorrow, status="provisioning"
    )
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


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


# The pool's default requires all four smoke tests; reports in these tests pass the other three.
OTHER_REQUIRED_SMOKE = [
    {
        "name": "bandwidth",
        "status": "passed",
        "metric": "copy_gb_per_s",
        "value": 4100.0,
        "unit": "GB/s",
        "baseline": 4000.0,
        "duration_s": 1.0,
    },
    {
        "name": "sdxl",
        "status": "passed",
        "metric": "images_per_s",
        "value": 1.1,
        "unit": "images/s",
        "baseline": None,
        "duration_s": 30.0,
    },
    {
        "name": "llm",
        "status": "passed",
        "metric": "tokens_per_s_batch1",
        "value": 40.0,
        "unit": "tokens/s",
        "baseline": None,
        "duration_s": 30.0,
    },
]


def report(verdict="pass", value=700.0):
    return {
        "schema_version": 1,
        "agent_version": "0.1.0",
        "profile": "mi300x",
        "hostname": "n1",
        "collected_at": "2030-01-01T00:00:00Z",
        "facts": {"gpus": []},
        "verdict": verdict,
        "findings": []
        if verdict == "pass"
        else [
            {
                "id": "ecc.uncorrectable",
                "severity": "fail",
                "message": "Uncorrectable ECC errors",
                "evidence": {},
                "remediation": "Replace the node",
            }
        ],
        "smoke": [
            {
                "name": "matmul",
                "status": "passed",
                "metric": "bf16_tflops",
                "value": value,
                "unit": "TFLOPS",
                "baseline": 600.0,
                "duration_s": 1.0,
            },
            # Copies: a test that edits its report's results must not edit the next test's.
            *(dict(result) for result in OTHER_REQUIRED_SMOKE),
        ],
    }


def test_bootstrap_is_answered_alike_until_the_first_report_then_refused(node):
    """A lost answer costs a retry, not a node (issue 29): the token works again, with the same
    heartbeat token, until the node's first report; after it, a replay (say, by the researcher
    who is root on the node and reads cloud-init) gets no credentials, and the sealed copy is
    gone."""
    client = bearer(bootstrap_token_for(node.pk))
    first = client.post("/api/v1/agent/bootstrap/")
    assert first.status_code == 200, first.content
    assert first.json()["node"] == node.pk and first.json()["heartbeat_token"].startswith("lgn_h_")
    again = client.post("/api/v1/agent/bootstrap/")
    assert again.status_code == 200, again.content
    assert again.json() == first.json()
    node.refresh_from_db()
    assert node.status == "checking"
    assert node.heartbeat_token_hash == hash_secret(first.json()["heartbeat_token"])
    assert node.heartbeat_token_sealed  # sealed, never the token itself
    assert first.json()["heartbeat_token"] not in node.heartbeat_token_sealed

    heartbeat = bearer(first.json()["heartbeat_token"])
    assert heartbeat.post("/api/v1/agent/reports/", report(), format="json").status_code == 201
    replay = client.post("/api/v1/agent/bootstrap/")
    assert replay.status_code == 401 and replay.json()["code"] == "token_used"
    assert "heartbeat_token" not in replay.json()
    node.refresh_from_db()
    assert node.heartbeat_token_sealed == "" and node.status == "ready"
    assert heartbeat.post("/api/v1/agent/heartbeat/").json() == {"action": "continue"}


def test_a_failed_report_also_closes_the_bootstrap(node):
    client = bearer(bootstrap_token_for(node.pk))
    token = client.post("/api/v1/agent/bootstrap/").json()["heartbeat_token"]
    bearer(token).post("/api/v1/agent/reports/", report("fail"), format="json")
    replay = client.post("/api/v1/agent/bootstrap/")
    assert replay.status_code == 401 and replay.json()["code"] == "token_used"


def test_I5_passing_report_makes_node_and_booking_ready(node, monkeypatch):
    heartbeat = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/").json()
    client = bearer(heartbeat["heartbeat_token"])
    response = client.post("/api/v1/agent/reports/", report(), format="json")
    assert response.status_code == 201, response.content
    node.refresh_from_db()
    assert node.status == "ready" and node.booking.status == "ready"
    assert client.post("/api/v1/agent/heartbeat/").json() == {"action": "continue"}


def test_invalid_report_is_refused_with_the_path(node):
    heartbeat = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/").json()
    bad = report()
    bad["verdict"] = "great"
    response = bearer(heartbeat["heartbeat_token"]).post(
        "/api/v1/agent/reports/", bad, format="json"
    )
    assert response.status_code == 400 and response.json()["code"] == "invalid_report"
    assert response.json()["extra"]["path"] == "verdict"
    node.refresh_from_db()
    assert node.status == "checking"


def test_I6_node_tokens_are_not_user_tokens(node, alice):
    heartbeat = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/").json()
    assert bearer(heartbeat["heartbeat_token"]).get("/api/v1/bookings/").status_code == 401
    assert bearer("lgp_nope").post("/api/v1/agent/heartbeat/").status_code == 401
    other = bearer(bootstrap_token_for(node.pk + 999)).post("/api/v1/agent/bootstrap/")
    assert other.status_code == 401


def test_baselines_are_the_median_of_the_nodes_latest_passing_reports(
    node, pool, alice, vision_lab, tomorrow
):
    for value in (600.0, 700.0, 650.0):
        smoke = report(value=value)["smoke"]
        booking = BookingFactory(
            lab=vision_lab, user=alice, pool=pool, start=tomorrow, status="completed"
        )
        HealthReport.objects.create(
            node=NodeFactory(booking=booking, provider_account=node.provider_account),
            instance_type=pool.instance_type,
            verdict="pass",
            collected_at=node.created_at,
            smoke=smoke,
        )
    HealthReport.objects.create(
        node=node,
        instance_type=pool.instance_type,
        verdict="fail",
        collected_at=node.created_at,
        smoke=report(value=1.0)["smoke"],
    )
    assert instance_type_baselines(pool.instance_type)["matmul:bf16_tflops"]["median"] == 650.0
    assert instance_type_baselines(pool.instance_type)["matmul:bf16_tflops"]["samples"] == 3


def test_bootstrap_of_a_node_whose_droplet_is_not_recorded_is_refused_and_retried(node):
    """I-8: no node leaves `creating` without its droplet. Here the create's answer was lost and
    the provider cannot be asked (no credentials): the agent is told to retry, nothing moves."""
    Node.objects.filter(pk=node.pk).update(status="creating", provider_id="")
    answer = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/")
    assert answer.status_code == 503 and answer.json()["code"] == "node_not_ready"
    node.refresh_from_db()
    assert (node.status, node.bootstrap_used_at) == ("creating", None)


def test_a_passing_report_for_a_node_without_an_address_waits_for_the_address(node):
    """I-5: ready means usable; the poll that learns the IP hands the node over."""
    Node.objects.filter(pk=node.pk).update(public_ip=None)
    heartbeat = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/").json()
    response = bearer(heartbeat["heartbeat_token"]).post(
        "/api/v1/agent/reports/", report(), format="json"
    )
    assert response.status_code == 201, response.content
    node.refresh_from_db()
    assert (node.status, node.booking.status) == ("checking", "provisioning")
    assert node.passed_at is not None

    from labgpu.providers import Droplet
    from labgpu.provisioning.services.nodes import _node_observe

    droplet = Droplet(
        id=7, name=node.name, status="active", size_slug="s", region="tor1", image="i",
        tags=(), public_ipv4="192.0.2.9", private_ipv4=None, created_at=None,
    )  # fmt: skip
    _node_observe(node, droplet)
    node.refresh_from_db()
    assert (node.status, node.public_ip, node.booking.status) == ("ready", "192.0.2.9", "ready")


def test_I5_the_database_refuses_a_ready_node_without_an_address(node):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        Node.objects.filter(pk=node.pk).update(status="ready", public_ip=None, passed_at=now())


def test_health_views_respect_isolation(node, as_alice, as_mallory, pool):
    assert as_alice.get(f"/api/v1/nodes/{node.pk}/health/").status_code == 200
    assert as_mallory.get(f"/api/v1/nodes/{node.pk}/health/").status_code == 404
    body = as_alice.get(f"/api/v1/instance-types/{pool.instance_type_id}/health/").json()
    assert body["instance_type"] == pool.instance_type_id and "baselines" in body


def test_bootstrap_hands_the_agent_the_smoke_tests_its_pool_requires(node, pool):
    answer = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/").json()
    assert answer["required_smoke"] == ["matmul", "bandwidth", "sdxl", "llm"]  # the default
    pool.required_smoke = ["matmul", "llm"]
    pool.save(update_fields=["required_smoke"])
    other = NodeFactory(
        booking=BookingFactory(pool=pool), provider_account=node.provider_account, provider_id="8"
    )
    Node.objects.filter(pk=other.pk).update(
        bootstrap_token_hash=hash_secret(bootstrap_token_for(other.pk))
    )
    answer = bearer(bootstrap_token_for(other.pk)).post("/api/v1/agent/bootstrap/").json()
    assert answer["required_smoke"] == ["matmul", "llm"]


def test_cloud_init_installs_the_smoke_extra_unless_the_pool_image_has_it(node, pool):
    from labgpu.provisioning.services.nodes import _droplet_spec

    assert "labgpu-agent[smoke]" in _droplet_spec(node).user_data
    pool.smoke_preinstalled = True
    pool.save(update_fields=["smoke_preinstalled"])
    node.refresh_from_db()
    user_data = _droplet_spec(node).user_data
    assert '"labgpu-agent"' in user_data and "[smoke]" not in user_data


def test_a_required_smoke_list_with_an_unknown_test_is_refused(pool):
    from django.core.exceptions import ValidationError

    pool.required_smoke = ["matmul", "mining"]
    with pytest.raises(ValidationError) as error:
        pool.full_clean()
    assert "required_smoke" in error.value.message_dict


def logged_in(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_site_admin_requests_a_deep_check_the_agent_gets_it_once_and_its_report_is_kept(
    node, carol, alice
):
    from labgpu.audit.models import AuditEvent

    heartbeat = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/").json()
    agent = bearer(heartbeat["heartbeat_token"])
    assert agent.post("/api/v1/agent/reports/", report(), format="json").status_code == 201

    response = logged_in(carol).post(f"/api/v1/nodes/{node.pk}/deep-check/")
    assert response.status_code == 202, response.content
    assert response.json()["node"] == node.pk and response.json()["status"] == "ready"
    assert AuditEvent.objects.filter(
        action="node.deep_check", target_id=str(node.pk), actor=carol
    ).exists()

    assert agent.post("/api/v1/agent/heartbeat/").json() == {"action": "deep_check"}
    assert agent.post("/api/v1/agent/heartbeat/").json() == {"action": "continue"}

    deep = report()
    deep["deep"] = True
    deep["facts"]["measurements"] = [
        {
            "tool": "rvs",
            "test": "babel",
            "gpu": 0,
            "metric": "memory_triad_gb_per_s",
            "value": 4290.0,
            "unit": "GB/s",
        }
    ]
    assert agent.post("/api/v1/agent/reports/", deep, format="json").status_code == 201
    history = logged_in(alice).get(f"/api/v1/nodes/{node.pk}/health/").json()
    assert [r["deep"] for r in history] == [True, False]
    assert history[0]["facts"]["measurements"][0]["value"] == 4290.0
    node.refresh_from_db()
    assert node.status == "ready"  # a deep report joins the history; it does not re-gate the node


def test_only_site_admins_may_request_a_deep_check(node, alice, bob, mallory):
    Node.objects.filter(pk=node.pk).update(status="ready", passed_at=now())
    for user in (alice, bob, mallory):
        assert logged_in(user).post(f"/api/v1/nodes/{node.pk}/deep-check/").status_code == 403
    node.refresh_from_db()
    assert node.deep_check_requested_at is None


def test_a_node_without_a_listening_agent_cannot_take_a_deep_check(node, carol):
    Node.objects.filter(pk=node.pk).update(status="destroyed")
    response = logged_in(carol).post(f"/api/v1/nodes/{node.pk}/deep-check/")
    assert response.status_code == 409 and response.json()["code"] == "invalid_status"
    assert logged_in(carol).post("/api/v1/nodes/999999/deep-check/").status_code == 404


def test_the_gate_wall_time_and_the_required_smoke_are_kept_with_the_report(node, alice):
    heartbeat = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/").json()
    sent = report()
    sent["required_smoke"] = ["matmul"]
    sent["timing"] = {"collect_s": 0.13, "smoke_s": 61.9, "gate_wall_s": 62.0}
    client = bearer(heartbeat["heartbeat_token"])
    assert client.post("/api/v1/agent/reports/", sent, format="json").status_code == 201
    stored = HealthReport.objects.get(node=node)
    assert stored.timing["gate_wall_s"] == 62.0 and stored.required_smoke == ["matmul"]
    (shown,) = logged_in(alice).get(f"/api/v1/nodes/{node.pk}/health/").json()
    assert shown["timing"]["gate_wall_s"] == 62.0


def test_I5_a_report_without_the_pools_required_smoke_fails_the_node_whatever_the_agent_says(
    node, pool
):
    """An agent without its smoke packages (or an old one) reports `pass` with no smoke results:
    the pool's rule still fails the node, with the reason (issue 12)."""
    heartbeat = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/").json()
    sent = report()
    sent["smoke"] = sent["smoke"][:1]  # matmul passed only; the pool requires all four
    response = bearer(heartbeat["heartbeat_token"]).post(
        "/api/v1/agent/reports/", sent, format="json"
    )
    assert response.status_code == 201 and response.json()["verdict"] == "fail"
    stored = HealthReport.objects.get(node=node)
    (finding,) = [f for f in stored.findings if f["id"] == "smoke.required_not_passed"]
    assert "bandwidth, sdxl, llm" in finding["message"]
    node.refresh_from_db()
    assert node.status == "failed" and "bandwidth, sdxl, llm" in node.failure_reason


def test_required_smoke_skipped_because_no_gpu_is_visible_points_at_the_driver(node):
    """Issue 23 item 4: with no GPU visible the reason is the driver, not a missing package —
    the remediation never says to install the smoke extra then."""
    heartbeat = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/").json()
    sent = report()
    for result in sent["smoke"]:
        result.update(
            status="skipped",
            value=None,
            reason="PyTorch sees no GPU (torch.cuda.is_available() is False)",
        )
    response = bearer(heartbeat["heartbeat_token"]).post(
        "/api/v1/agent/reports/", sent, format="json"
    )
    assert response.status_code == 201 and response.json()["verdict"] == "fail"
    stored = HealthReport.objects.get(node=node)
    (finding,) = [f for f in stored.findings if f["id"] == "smoke.required_not_passed"]
    assert "sees no GPU" in finding["remediation"]
    assert "Install labgpu-agent[smoke]" not in finding["remediation"]


def test_a_pool_that_wants_the_deep_check_at_handover_says_so_and_holds_the_agent_to_it(node, pool):
    """Issue 23 item 2: NodePool.deep_at_handover reaches the agent in the bootstrap answer; a
    first report that is not deep fails the node, a deep one (with the pool's smoke) passes it."""
    pool.deep_at_handover = True
    pool.save(update_fields=["deep_at_handover"])
    answer = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/").json()
    assert answer["deep"] is True
    response = bearer(answer["heartbeat_token"]).post(
        "/api/v1/agent/reports/", report(), format="json"
    )
    assert response.json()["verdict"] == "fail"
    ids = [f["id"] for f in HealthReport.objects.get(node=node).findings]
    assert ids == ["deep.required_not_run"], ids
    node.refresh_from_db()
    assert node.status == "failed"

    other = NodeFactory(
        booking=BookingFactory(pool=pool), provider_account=node.provider_account, provider_id="9"
    )
    Node.objects.filter(pk=other.pk).update(
        bootstrap_token_hash=hash_secret(bootstrap_token_for(other.pk))
    )
    answer = bearer(bootstrap_token_for(other.pk)).post("/api/v1/agent/bootstrap/").json()
    deep_without_smoke = {**report(), "deep": True, "smoke": report()["smoke"][:1]}
    response = bearer(answer["heartbeat_token"]).post(
        "/api/v1/agent/reports/", deep_without_smoke, format="json"
    )
    # A deep handover report still owes the pool its smoke tests.
    assert [f["id"] for f in HealthReport.objects.get(node=other).findings] == [
        "smoke.required_not_passed"
    ]


def test_a_deep_first_report_with_the_pools_smoke_hands_the_node_over(node, pool):
    pool.deep_at_handover = True
    pool.save(update_fields=["deep_at_handover"])
    answer = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/").json()
    response = bearer(answer["heartbeat_token"]).post(
        "/api/v1/agent/reports/", {**report(), "deep": True}, format="json"
    )
    assert response.status_code == 201 and response.json()["verdict"] == "pass"
    node.refresh_from_db()
    assert node.status == "ready"


def test_by_default_a_pool_asks_for_no_deep_check(node):
    answer = bearer(bootstrap_token_for(node.pk)).post("/api/v1/agent/bootstrap/").json()
    assert answer["deep"] is False

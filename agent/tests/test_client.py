"""`labgpu-agent run` against a stub API on 127.0.0.1: the protocol in agent/README.md."""

from __future__ import annotations

import json
import random
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from labgpu_agent.cli import main
from labgpu_agent.client import AgentClient, ApiError, RetryPolicy, run_agent
from labgpu_agent.report import validate_report

BOOT = {"node": 7, "heartbeat_token": "hb-secret", "profile": "h200", "heartbeat_interval_s": 0}


class StubApi:
    """Answers each path from a script of (status, body, headers); records what it received."""

    def __init__(self) -> None:
        self.script: dict[str, list[tuple[int, Any, dict[str, str]]]] = {}
        self.received: list[tuple[str, str, Any]] = []
        self.drop_first_answer: set[str] = set()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"null")
                stub.received.append((self.path, self.headers.get("Authorization", ""), body))
                kind = self.path.split("/")[-2]
                if kind in stub.drop_first_answer:
                    stub.drop_first_answer.discard(kind)
                    self.close_connection = True  # the request arrived; its answer never leaves
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                queue = stub.script.get(self.path, [])
                status, reply, headers = queue.pop(0) if len(queue) > 1 else queue[0]
                data = json.dumps(reply).encode()
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def on(self, path: str, *replies: tuple[int, Any] | tuple[int, Any, dict[str, str]]) -> None:
        self.script[f"/api/v1/agent/{path}/"] = [
            (r[0], r[1], r[2] if len(r) > 2 else {}) for r in replies
        ]

    def paths(self) -> list[str]:
        return [p.split("/")[-2] for p, _, _ in self.received]


@pytest.fixture
def api() -> Iterator[StubApi]:
    stub = StubApi()
    thread = threading.Thread(target=stub.server.serve_forever, daemon=True)
    thread.start()
    yield stub
    stub.server.shutdown()
    stub.server.server_close()


def client(api: StubApi, sleeps: list[float] | None = None) -> AgentClient:
    log = sleeps if sleeps is not None else []
    return AgentClient(
        api.url, retry=RetryPolicy(max_attempts=4, base_delay_s=0.5, jitter=0), sleep=log.append
    )


def test_run_bootstraps_reports_then_heartbeats_until_told_to_stop(api, capsys):
    api.on("bootstrap", (200, BOOT))
    api.on("reports", (201, {"id": 1}))
    api.on(
        "heartbeat",
        (200, {"action": "continue"}),
        (200, {"action": "continue"}),
        (200, {"action": "stop"}),
    )
    code = main(
        ["run", "--api", api.url, "--token", "boot-once", "--fixture-profile", "healthy-h200"]
    )
    assert code == 0
    assert api.paths() == ["bootstrap", "reports", "heartbeat", "heartbeat", "heartbeat"]
    (_, boot_auth, _), (_, report_auth, report), *beats = api.received
    assert boot_auth == "Bearer boot-once" and report_auth == "Bearer hb-secret"
    validate_report(report)
    assert report["profile"] == "h200" and report["verdict"] == "pass"
    assert all(body["status"] == "alive" for _, _, body in beats)
    # Fixture mode reports the recorded H200's one GPU with (made-up, varying) utilisation.
    usages = [body["usage"] for _, _, body in beats]
    assert all(len(u["gpus"]) == 1 and u["gpus"][0]["vram_total_mib"] > 0 for u in usages)


def test_heartbeat_401_or_410_means_the_booking_ended(api):
    for status in (401, 410):
        api.received.clear()
        api.on("bootstrap", (200, BOOT))
        api.on("reports", (201, {}))
        api.on("heartbeat", (status, {"message": "gone"}))
        assert run_agent(client(api), bootstrap_token="t", make_report=lambda _p: {}) == 0
        assert api.paths() == ["bootstrap", "reports", "heartbeat"]


def test_transient_errors_are_retried_with_backoff_and_retry_after(api):
    sleeps: list[float] = []
    api.on("bootstrap", (503, {}), (429, {}, {"Retry-After": "7"}), (200, BOOT))
    api.on("reports", (502, {}), (201, {}))
    api.on("heartbeat", (200, {"action": "stop"}))
    assert run_agent(client(api, sleeps), bootstrap_token="t", make_report=lambda _p: {}) == 0
    # 0.5 s then Retry-After's 7 s for bootstrap; 0.5 s for the report; 0 s heartbeat interval.
    assert sleeps == [0.5, 7.0, 0.5, 0.0]
    assert api.paths() == ["bootstrap"] * 3 + ["reports"] * 2 + ["heartbeat"]


def test_retries_are_bounded(api):
    sleeps: list[float] = []
    api.on("bootstrap", (500, {}))
    with pytest.raises(ApiError, match="giving up after 4 attempts"):
        client(api, sleeps).bootstrap("t")
    assert sleeps == [0.5, 1.0, 2.0]


def test_a_used_bootstrap_token_is_not_retried(api, capsys):
    """The API refuses the bootstrap token only after the node's first report (a lost answer is
    answered again before it): a 401 is final, like every 4xx but 429."""
    api.on("bootstrap", (401, {"code": "token_used", "message": "token already used"}))
    assert (
        main(["run", "--api", api.url, "--token", "used", "--fixture-profile", "healthy-h200"]) == 1
    )
    assert api.paths() == ["bootstrap"]
    assert "401" in capsys.readouterr().err


def test_a_lost_answer_of_each_kind_is_asked_again(api):
    """The request reaches the API and the connection closes before the answer: each of
    bootstrap, report and heartbeat is sent again with the same token and body."""
    api.on("bootstrap", (200, BOOT))
    api.on("reports", (201, {"id": 1}))
    api.on("heartbeat", (200, {"action": "stop"}))
    api.drop_first_answer = {"bootstrap", "reports", "heartbeat"}
    sleeps: list[float] = []
    assert run_agent(client(api, sleeps), bootstrap_token="t", make_report=lambda _p: {"r": 1}) == 0
    assert api.paths() == ["bootstrap"] * 2 + ["reports"] * 2 + ["heartbeat"] * 2
    assert api.received[0] == api.received[1] and api.received[2] == api.received[3]
    assert sleeps == [0.5, 0.5, 0.0, 0.5]  # one backoff each; 0 s heartbeat interval


def test_backoff_is_capped_and_jittered():
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=30.0, jitter=0.5, rng=random.Random(29))
    delays = [[policy.delay(attempt, None) for attempt in range(8)] for _ in range(20)]
    for run in delays:
        for attempt, delay in enumerate(run):
            full = min(2.0**attempt, 30.0)
            assert full / 2 <= delay <= full
    assert len({run[5] for run in delays}) == 20  # agents that failed together spread out
    assert policy.delay(3, "7") == 7.0 and policy.delay(0, "600") == 30.0


def test_a_scaled_policy_scales_every_delay_and_nothing_else():
    scaled = RetryPolicy.scaled(0.1)
    assert (scaled.base_delay_s, scaled.max_delay_s) == pytest.approx((0.1, 3.0))
    assert (scaled.max_attempts, scaled.jitter) == (
        RetryPolicy().max_attempts,
        RetryPolicy().jitter,
    )
    production = RetryPolicy.scaled(1.0)
    assert (production.base_delay_s, production.max_delay_s) == (1.0, 30.0)


def test_a_heartbeat_that_keeps_failing_is_skipped_not_fatal(api):
    api.on("bootstrap", (200, BOOT))
    api.on("reports", (201, {}))
    api.on("heartbeat", *([(503, {})] * 4), (200, {"action": "stop"}))
    assert run_agent(client(api), bootstrap_token="t", make_report=lambda _p: {}) == 0
    assert api.paths() == ["bootstrap", "reports"] + ["heartbeat"] * 5


def test_connection_refused_is_transient_then_gives_up():
    sleeps: list[float] = []
    dead = AgentClient(
        "http://127.0.0.1:9",
        retry=RetryPolicy(max_attempts=3, base_delay_s=0.1, jitter=0),
        sleep=sleeps.append,
    )
    with pytest.raises(ApiError, match="ConnectError"):
        dead.heartbeat("t")
    assert sleeps == [0.1, 0.2]


def test_the_pools_required_smoke_reaches_the_report_and_deep_check_is_run_on_request(api):
    """Bootstrap names the smoke tests the pool requires; a heartbeat answered `deep_check`
    makes the agent run the deep check and send a second report marked `deep`."""
    api.on("bootstrap", (200, {**BOOT, "required_smoke": ["matmul", "sdxl"]}))
    api.on("reports", (201, {}))
    api.on("heartbeat", (200, {"action": "deep_check"}), (200, {"action": "stop"}))
    code = main(
        ["run", "--api", api.url, "--token", "boot-once", "--fixture-profile", "healthy-h200"]
    )
    assert code == 0
    assert api.paths() == ["bootstrap", "reports", "heartbeat", "reports", "heartbeat"]
    first, deep = (body for path, _, body in api.received if path.endswith("/reports/"))
    assert first["required_smoke"] == ["matmul", "sdxl"] and first["deep"] is False
    assert {s["name"] for s in first["smoke"]} == {"matmul", "sdxl"}
    assert first["timing"]["gate_wall_s"] >= 0 and deep["deep"] is True


def test_refused_usage_is_dropped_and_the_heartbeat_still_sent(api):
    api.on("bootstrap", (200, BOOT))
    api.on("reports", (201, {}))
    api.on("heartbeat", (400, {"code": "invalid_heartbeat"}), (200, {"action": "stop"}))
    code = run_agent(
        client(api),
        bootstrap_token="t",
        make_report=lambda _p: {},
        make_usage=lambda: {"gpus": [{"index": 0, "utilisation_pct": 900}]},
    )
    assert code == 0
    beats = [body for path, _, body in api.received if path.endswith("heartbeat/")]
    assert beats == [
        {"status": "alive", "usage": {"gpus": [{"index": 0, "utilisation_pct": 900}]}},
        {"status": "alive"},
    ]


def test_a_pool_that_wants_deep_at_handover_gets_a_deep_first_report(api):
    """Bootstrap `deep: true` (NodePool.deep_at_handover): the first report is the deep check,
    with the pool's smoke tests in it too."""
    api.on("bootstrap", (200, {**BOOT, "required_smoke": ["matmul"], "deep": True}))
    api.on("reports", (201, {}))
    api.on("heartbeat", (200, {"action": "stop"}))
    code = main(
        ["run", "--api", api.url, "--token", "boot-once", "--fixture-profile", "healthy-h200"]
    )
    assert code == 0 and api.paths() == ["bootstrap", "reports", "heartbeat"]
    ((_, _, first),) = [r for r in api.received if r[0].endswith("/reports/")]
    assert first["deep"] is True and [s["name"] for s in first["smoke"]] == ["matmul"]

"""DigitalOcean's own OpenAPI description (../shared/contracts, read in place) as the referee.

(a) every request the driver sends and (b) every response the emulator gives — successes and
errors — must validate against it; the official `pydo` client must be able to drive the emulator.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from emulator import contract
from emulator.contract import ExchangeRecorder
from labgpu.providers import (
    DropletSpec,
    ProviderAmbiguousCreate,
    ProviderNotFound,
    ProviderPendingEvent,
    ProviderPermanentError,
    create_or_adopt,
)
from labgpu.providers.cloudinit import render_user_data
from labgpu.providers.tests.ssh_fixtures import ED25519

pytestmark = pytest.mark.slow  # a live emulator subprocess (see pyproject markers)


@pytest.fixture(scope="module")
def openapi() -> Any:
    return contract.require_contract()  # skips, saying why, when the spec is not here


def spec(node_id: int, **overrides: Any) -> DropletSpec:
    fields: dict[str, Any] = {
        "node_id": node_id,
        "region": "tor1",
        "size": "gpu-mi300x1-192gb",
        "image": "gpu-amd-base",
        **overrides,
    }
    return DropletSpec(**fields)


def test_driver_requests_and_emulator_responses_follow_the_digitalocean_contract(
    openapi, make_driver, emulator, account_key
):
    recorder = ExchangeRecorder()
    driver = make_driver(event_hooks=recorder.hooks, sleep=lambda s: time.sleep(min(s, 0.05)))
    user_data = render_user_data(
        api_url="http://127.0.0.1:8000",
        bootstrap_token="bootstrap-abcdef123456",
        ssh_authorized_keys=[ED25519],
    )
    emulator.configure(max_per_page=3, boot_delay_s=60)

    created = driver.create(
        spec(
            1,
            user_data=user_data,
            ssh_keys=(account_key["id"], account_key["fingerprint"]),
            tags=("lab:physics",),
            vpc_uuid="760e09ef-dc84-11e8-981e-3cfdfeaae000",
        )
    )
    for node_id in range(2, 8):
        driver.create(spec(node_id, size="gpu-mi350x1-288gb", region="atl1", image="gpu-amd-base"))
    emulator.activate(created.id)
    assert driver.get(created.id).status == "active"
    assert len(driver.list_ours()) == 7  # three pages at max_per_page=3
    assert driver.find_by_tag("labgpu-node-3")
    assert driver.sizes()
    # the error paths, answered by the emulator and parsed by the driver
    emulator.fail_next("GET", "/v2/sizes", 500)
    driver.sizes()
    emulator.set_faults(no_capacity_sizes=["gpu-h200x1-141gb"])
    with pytest.raises(ProviderPermanentError):
        driver.create(spec(8, size="gpu-h200x1-141gb", region="nyc2", image="gpu-h100x1-base"))
    emulator.fail_next("POST", "/v2/droplets", 500, after_create=True)
    with pytest.raises(ProviderAmbiguousCreate):
        driver.create(spec(9))
    assert create_or_adopt(driver, spec(9))[1] is True
    with pytest.raises(ProviderPendingEvent):  # 422 while the create event runs
        driver.destroy(driver.find_by_tag("labgpu-node-9")[0].id)
    assert driver.destroy(created.id) is True  # this DELETE was the one accepted
    with pytest.raises(ProviderNotFound):
        driver.get(created.id)
    assert driver.destroy(created.id) is False  # already gone: still a success

    statuses = {e.status for e in recorder.exchanges}
    assert {200, 202, 204, 404, 422, 500} <= statuses
    recorder.assert_valid()


def test_emulator_error_answers_follow_the_contract(openapi, emulator):
    unauthenticated = ExchangeRecorder()
    with httpx.Client(base_url=emulator.url, event_hooks=unauthenticated.hooks) as client:
        assert client.get("/v2/droplets").status_code == 401
    # the request is wrong on purpose (no bearer token, and the validator says so); the answer isn't
    assert unauthenticated.errors(responses=False)
    unauthenticated.assert_valid(requests=False)

    recorder = ExchangeRecorder()
    emulator.configure(rate_limit=2, rate_window_s=60)
    auth = {"Authorization": "Bearer contract-token"}
    with httpx.Client(base_url=emulator.url, event_hooks=recorder.hooks) as client:
        assert client.get("/v2/droplets/1", headers=auth).status_code == 404
        assert client.get("/v2/droplets?type=gpus", headers=auth).status_code == 200
        # this third request is over the limit of 2
        assert client.get("/v2/sizes", headers=auth).status_code == 429

    recorder.assert_valid()
    too_many = recorder.exchanges[-1]
    body = json.loads(too_many.response_body)
    assert body["id"] == "too_many_requests" and body["request_id"]
    assert int(too_many.response_headers["retry-after"]) >= 1
    for header in ("ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"):
        assert header in too_many.response_headers


def test_actions_keys_stock_and_quota_answers_follow_the_contract(openapi, emulator, tmp_path):
    """The answers added to be DigitalOcean-like are checked by DigitalOcean's own spec too."""
    import subprocess

    key_path = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key_path)], check=True)
    public_key = (tmp_path / "id_ed25519.pub").read_text().strip()
    emulator.configure(boot_delay_s=60, rate_limit_hourly=12)
    emulator.set_stock("gpu-mi300x1-192gb", "tor1", 1)
    body = {
        "name": "labgpu-node-1",
        "region": "tor1",
        "size": "gpu-mi300x1-192gb",
        "image": "gpu-amd-base",
        "tags": ["labgpu-node-1"],
    }
    recorder = ExchangeRecorder()
    with httpx.Client(
        base_url=emulator.url,
        headers={"Authorization": "Bearer contract-token"},
        event_hooks=recorder.hooks,
    ) as client:
        key = client.post("/v2/account/keys", json={"name": "lab", "public_key": public_key})
        assert key.status_code == 201
        assert client.get("/v2/account/keys").status_code == 200
        created = client.post(
            "/v2/droplets", json={**body, "ssh_keys": [key.json()["ssh_key"]["fingerprint"]]}
        )
        assert created.status_code == 202
        droplet_id = created.json()["droplet"]["id"]
        assert client.get(created.json()["links"]["actions"][0]["href"]).status_code == 200
        assert client.get(f"/v2/droplets/{droplet_id}/actions").status_code == 200
        assert client.delete(f"/v2/droplets/{droplet_id}").status_code == 422  # pending event
        out = client.post("/v2/droplets", json={**body, "name": "labgpu-node-2"})
        assert out.status_code == 422 and out.json()["error_attributes"]
        assert client.post("/v2/droplets", json={**body, "ssh_keys": [1]}).status_code == 422
        assert client.get("/v2/sizes", params={"per_page": 200}).status_code == 200
        assert client.get("/v2/regions").status_code == 200
        assert client.get("/v2/actions/1").status_code == 404
        # the hourly quota (12) is spent here: 429 with ratelimit-* and no retry-after
        assert client.get("/v2/sizes").status_code == 200
        quota_spent = client.get("/v2/sizes")
        assert quota_spent.status_code == 429 and "retry-after" not in quota_spent.headers

    recorder.assert_valid()


def test_combining_type_and_tag_name_is_refused_like_digitalocean(openapi, emulator):
    recorder = ExchangeRecorder()
    with httpx.Client(
        base_url=emulator.url,
        headers={"Authorization": "Bearer t"},
        event_hooks=recorder.hooks,
    ) as client:
        response = client.get("/v2/droplets", params={"type": "gpus", "tag_name": "x"})

    assert response.status_code == 422
    assert response.json()["id"] == "unprocessable_entity"
    recorder.assert_valid(requests=False)  # the spec cannot express the rule; the answer fits it


def test_the_validator_rejects_what_breaks_the_contract(openapi):
    """A control: the referee must actually blow the whistle."""
    url = f"{contract.SPEC_ORIGIN}/v2/droplets?type=gpus&per_page=500"
    with pytest.raises(Exception, match=r"(?i)per_page|parameter"):
        contract.validate_request("GET", url, {"Authorization": "Bearer t"}, None)

    droplet_without_required_fields = json.dumps({"droplet": {"id": 1, "name": "x"}}).encode()
    with pytest.raises(Exception):  # noqa: B017 - openapi-core's error classes vary by version
        contract.validate_response(
            "GET",
            f"{contract.SPEC_ORIGIN}/v2/droplets/1",
            {"Authorization": "Bearer t"},
            None,
            200,
            {"content-type": "application/json"},
            droplet_without_required_fields,
        )


def test_pydo_drives_the_emulator_create_get_list_destroy(openapi, emulator):
    pydo = pytest.importorskip("pydo")
    problems: list[str] = []

    def validate(pipeline_response: Any) -> None:
        request, response = pipeline_response.http_request, pipeline_response.http_response
        try:
            contract.validate_response(
                request.method,
                request.url,
                dict(request.headers),
                request.body,
                response.status_code,
                dict(response.headers),
                response.body(),
            )
        except Exception as exc:
            problems.append(f"{request.method} {request.url}: {exc}")

    # retry_total=0: pydo's default policy would resend POST /v2/droplets after a 5xx
    client = pydo.Client(
        "pydo-token", endpoint=emulator.url, retry_total=0, raw_response_hook=validate
    )
    # azure-core refuses bearer tokens over plain http unless told the URL is trusted
    opts = {"enforce_https": False}

    created = client.droplets.create(
        body={
            "name": "labgpu-node-501",
            "region": "tor1",
            "size": "gpu-mi300x1-192gb",
            "image": "gpu-amd-base",
            "tags": ["labgpu-node-501"],
        },
        **opts,
    )["droplet"]
    assert created["status"] == "new"
    emulator.activate(created["id"])  # a destroy waits for the create event (422 before)
    fetched = client.droplets.get(droplet_id=created["id"], **opts)["droplet"]
    assert fetched["name"] == "labgpu-node-501"
    gpus = client.droplets.list(type="gpus", per_page=200, **opts)
    assert [d["id"] for d in gpus["droplets"]] == [created["id"]]
    plain = client.droplets.list(per_page=200, **opts)
    assert plain["droplets"] == []  # GPU droplets are left out without type=gpus
    client.droplets.destroy(droplet_id=created["id"], **opts)
    assert emulator.droplets() == []
    assert problems == []

"""The emulator over real HTTP: DigitalOcean's behaviour and quirks, faults, persistence, agents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from emulator.testing import start_emulator
from labgpu.providers.cloudinit import render_user_data

pytestmark = pytest.mark.slow  # a live emulator subprocess (see pyproject markers)

AUTH = {"Authorization": "Bearer emulator-test-token"}
BODY = {
    "name": "labgpu-node-1",
    "region": "tor1",
    "size": "gpu-mi300x1-192gb",
    "image": "gpu-amd-base",
    "tags": ["labgpu-node-1"],
}


@pytest.fixture
def api(emulator):
    with httpx.Client(base_url=emulator.url, headers=AUTH, timeout=10) as client:
        yield client


def create(api, **overrides) -> dict:
    response = api.post("/v2/droplets", json={**BODY, **overrides})
    assert response.status_code == 202, response.text
    return response.json()["droplet"]


def wait_until(predicate, timeout_s: float = 5.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def test_requests_without_a_bearer_token_get_digitaloceans_401(emulator):
    response = httpx.get(f"{emulator.url}/v2/droplets")

    assert response.status_code == 401
    body = response.json()
    assert body["id"] == "unauthorized" and body["message"] and body["request_id"]


def test_headers_describe_the_hourly_quota_and_the_burst_limit_429s_with_retry_after(emulator, api):
    emulator.configure(rate_limit=3, rate_window_s=60)
    started = time.time()

    answers = [api.get("/v2/sizes") for _ in range(4)]

    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    # DigitalOcean: limit and remaining are the hourly quota's, reset is when the oldest request
    # of that hour expires (the contract's header descriptions); the burst 429 shows remaining 0
    # ("Sample Rate Limit Headers When Burst Limit is Reached", the API reference's introduction)
    assert {a.headers["ratelimit-limit"] for a in answers} == {"5000"}
    assert [a.headers["ratelimit-remaining"] for a in answers] == ["4999", "4998", "4997", "0"]
    assert all(started + 3599 <= int(a.headers["ratelimit-reset"]) for a in answers)
    assert all(int(a.headers["ratelimit-reset"]) <= time.time() + 3601 for a in answers)
    assert answers[3].json()["id"] == "too_many_requests"
    # the burst limit's 429 says when a slot frees (DigitalOcean's 2023 release note)
    assert 1 <= int(answers[3].headers["retry-after"]) <= 60
    assert "retry-after" not in answers[0].headers


def test_an_exhausted_hourly_quota_429s_with_only_the_ratelimit_headers(emulator, api):
    emulator.configure(rate_limit_hourly=2)

    answers = [api.get("/v2/sizes") for _ in range(3)]

    assert [a.status_code for a in answers] == [200, 200, 429]
    refused = answers[2]
    assert refused.json()["id"] == "too_many_requests"
    assert "retry-after" not in refused.headers
    assert refused.headers["ratelimit-remaining"] == "0"
    assert 3590 < int(refused.headers["ratelimit-reset"]) - time.time() <= 3601


def test_both_windows_count_every_request(emulator, api):
    emulator.configure(rate_limit=3, rate_window_s=1.0, rate_limit_hourly=5)

    first = [api.get("/v2/sizes").status_code for _ in range(4)]
    time.sleep(1.1)  # the burst window has slid on; the hourly one has not
    second = [api.get("/v2/sizes") for _ in range(3)]

    assert first == [200, 200, 200, 429]  # the burst limit
    assert [a.status_code for a in second] == [200, 200, 429]  # the hourly quota: 5 in all
    assert "retry-after" not in second[2].headers
    assert emulator.state()["counters"]["rate_limited"] == 2


def test_the_rate_limit_is_per_token(emulator, api):
    emulator.configure(rate_limit=1, rate_window_s=60)
    assert api.get("/v2/sizes").status_code == 200
    assert api.get("/v2/sizes").status_code == 429

    other = httpx.get(f"{emulator.url}/v2/sizes", headers={"Authorization": "Bearer someone-else"})

    assert other.status_code == 200


def test_droplets_go_from_new_to_active_after_the_boot_delay_with_a_public_ipv4(emulator, api):
    emulator.configure(boot_delay_s=0.3)
    droplet = create(api)
    assert droplet["status"] == "new"

    active = wait_until(
        lambda: (
            (d := api.get(f"/v2/droplets/{droplet['id']}").json()["droplet"])["status"] == "active"
            and d
        )
    )

    public = [n for n in active["networks"]["v4"] if n["type"] == "public"]
    assert public and public[0]["ip_address"].startswith(("192.0.2.", "198.51.100.", "203.0.113."))


def test_gpu_droplets_are_left_out_of_the_plain_listing(emulator, api):
    gpu = create(api)
    emulator.seed(1, size="s-1vcpu-1gb", tags=["labgpu-node-1"])

    plain = api.get("/v2/droplets").json()
    gpus = api.get("/v2/droplets", params={"type": "gpus"}).json()
    tagged = api.get("/v2/droplets", params={"tag_name": "labgpu-node-1"}).json()

    assert [d["id"] for d in gpus["droplets"]] == [gpu["id"]]
    assert gpu["id"] not in [d["id"] for d in plain["droplets"]]
    assert len(plain["droplets"]) == 1 and plain["droplets"][0]["size_slug"] == "s-1vcpu-1gb"
    # the trap: filtering by our tag without type=gpus does not find the GPU droplet
    assert gpu["id"] not in [d["id"] for d in tagged["droplets"]]


def test_type_cannot_be_combined_with_tag_name(api):
    response = api.get("/v2/droplets", params={"type": "gpus", "tag_name": "labgpu-node-1"})

    assert response.status_code == 422
    assert response.json()["id"] == "unprocessable_entity"


def test_listing_is_paginated_with_links_and_total(emulator, api):
    emulator.seed(5)

    first = api.get("/v2/droplets", params={"type": "gpus", "per_page": 2}).json()
    last = api.get(first["links"]["pages"]["last"]).json()

    assert first["meta"]["total"] == 5
    assert len(first["droplets"]) == 2
    assert "page=2" in first["links"]["pages"]["next"]
    assert "type=gpus" in first["links"]["pages"]["next"]
    assert len(last["droplets"]) == 1
    assert "next" not in last["links"]["pages"]
    assert "prev" in last["links"]["pages"]


def test_per_page_is_capped_at_the_configured_maximum(emulator, api):
    emulator.configure(max_per_page=3)
    emulator.seed(4)

    page = api.get("/v2/droplets", params={"type": "gpus", "per_page": 200}).json()

    assert len(page["droplets"]) == 3 and "next" in page["links"]["pages"]


def test_sizes_list_has_the_gpu_sizes_with_prices(api):
    sizes = {s["slug"]: s for s in api.get("/v2/sizes", params={"per_page": 200}).json()["sizes"]}

    for slug in (
        "gpu-mi300x1-192gb",
        "gpu-mi300x8-1536gb",
        "gpu-mi325x8-2048gb-contracted",
        "gpu-mi350x1-288gb",
        "gpu-mi350x8-2304gb",
        "gpu-h100x1-80gb",
        "gpu-h200x1-141gb",
    ):
        assert sizes[slug]["price_hourly"] > 0
        assert sizes[slug]["gpu_info"]["count"] in (1, 8)
    assert sizes["gpu-mi300x1-192gb"]["price_hourly"] == 1.99


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"size": "gpu-nope"}, "invalid size"),
        ({"image": "no-such-image"}, "invalid image"),
        ({"name": "bad name!"}, "Name"),
        ({"ssh_keys": ["ssh-ed25519 AAAAC3Nza alice"]}, "invalid key identifiers"),
        ({"ssh_keys": [289794]}, "289794 are invalid key identifiers for Droplet creation"),
        (
            {"ssh_keys": ["3b:16:e4:bf:8b:00:8b:b8:59:8c:a9:d3:f0:19:fa:45"]},
            "invalid key identifiers",
        ),
        ({"size": "gpu-h100x1-80gb", "region": "ams3"}, "invalid image"),  # AMD image, ams3
        ({"user_data": "x" * (64 * 1024 + 1)}, "64 KiB"),
        ({"size": "gpu-mi350x1-288gb", "region": "tor1"}, "Size is not available in this region"),
    ],
)
def test_invalid_creates_are_refused_with_422_and_a_message(api, overrides, fragment):
    response = api.post("/v2/droplets", json={**BODY, **overrides})

    assert response.status_code == 422
    assert fragment in response.json()["message"]


def test_no_capacity_fault_refuses_that_size_only(emulator, api):
    emulator.set_faults(no_capacity_sizes=["gpu-mi300x1-192gb"])

    refused = api.post("/v2/droplets", json=BODY)
    accepted = api.post("/v2/droplets", json={**BODY, "size": "gpu-h100x1-80gb"})

    assert refused.status_code == 422 and "no capacity" in refused.json()["message"]
    assert accepted.status_code == 202


def test_after_create_fault_creates_the_droplet_and_answers_500(emulator, api):
    emulator.fail_next("POST", "/v2/droplets", 500, after_create=True)

    response = api.post("/v2/droplets", json=BODY)

    assert response.status_code == 500
    assert response.json()["id"] == "server_error"
    assert [d["name"] for d in emulator.droplets()] == ["labgpu-node-1"]
    assert emulator.state()["faults"]["next"] == []  # consumed


def test_error_rate_fault_answers_500_without_acting(emulator, api):
    emulator.set_faults(error_rate_5xx=1.0)

    assert api.post("/v2/droplets", json=BODY).status_code == 500
    assert emulator.droplets() == []


def test_timeout_fault_acts_but_answers_too_late(emulator):
    emulator.set_faults(timeout_rate=1.0, timeout_s=1.0)

    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{emulator.url}/v2/droplets", json=BODY, headers=AUTH, timeout=0.3)

    assert wait_until(lambda: emulator.droplets())


def test_never_boot_droplets_stay_new(emulator, api):
    emulator.configure(boot_delay_s=0.05)
    emulator.set_faults(never_boot=["labgpu-node-2"])
    stuck = create(api, name="labgpu-node-2")
    fine = create(api, name="labgpu-node-3")

    wait_until(
        lambda: api.get(f"/v2/droplets/{fine['id']}").json()["droplet"]["status"] == "active"
    )
    time.sleep(0.2)

    assert api.get(f"/v2/droplets/{stuck['id']}").json()["droplet"]["status"] == "new"


def test_vanishing_droplets_disappear_after_turning_active(emulator, api):
    emulator.configure(boot_delay_s=0.05)
    emulator.set_faults(vanish_after_s=0.3)
    droplet = create(api)

    wait_until(lambda: api.get(f"/v2/droplets/{droplet['id']}").status_code == 404)


def test_slow_delete_keeps_the_droplet_visible_as_off_for_a_while(emulator, api):
    emulator.set_faults(slow_delete_s=0.5)
    droplet = create(api)
    emulator.activate(droplet["id"])

    assert api.delete(f"/v2/droplets/{droplet['id']}").status_code == 204
    lingering = api.get(f"/v2/droplets/{droplet['id']}")

    assert lingering.status_code == 200 and lingering.json()["droplet"]["status"] == "off"
    assert api.delete(f"/v2/droplets/{droplet['id']}").status_code == 204  # still idempotent
    wait_until(lambda: api.get(f"/v2/droplets/{droplet['id']}").status_code == 404)


def test_delete_then_get_is_404_with_digitaloceans_error_body(emulator, api):
    droplet = create(api)
    emulator.activate(droplet["id"])
    assert api.delete(f"/v2/droplets/{droplet['id']}").status_code == 204

    response = api.get(f"/v2/droplets/{droplet['id']}")

    assert response.status_code == 404
    assert set(response.json()) == {"id", "message", "request_id"}
    assert api.delete(f"/v2/droplets/{droplet['id']}").status_code == 404


def test_reset_forgets_droplets_and_faults(emulator, api):
    create(api)
    emulator.set_faults(error_rate_5xx=0.5)

    emulator.reset()

    assert emulator.droplets() == []
    assert emulator.state()["faults"]["error_rate_5xx"] == 0


def test_unknown_faults_are_refused(emulator):
    response = httpx.post(f"{emulator.url}/_emulator/faults", json={"error_rate": 1})

    assert response.status_code == 400


def test_state_survives_a_restart_and_boots_continue(tmp_path):
    handle = start_emulator(tmp_path / "emu", boot_delay_s=1.0)
    try:
        with httpx.Client(base_url=handle.url, headers=AUTH) as client:
            first = client.post("/v2/droplets", json=BODY).json()["droplet"]
            handle.set_faults(no_capacity_sizes=["gpu-h200x1-141gb"])

            handle.kill()  # no graceful save: every mutation is already on disk
            handle.start()

            again = client.get(f"/v2/droplets/{first['id']}")
            assert again.status_code == 200
            wait_until(
                lambda: (
                    client.get(f"/v2/droplets/{first['id']}").json()["droplet"]["status"]
                    == "active"
                )
            )
            second = client.post("/v2/droplets", json={**BODY, "name": "labgpu-node-2"})
            assert second.json()["droplet"]["id"] > first["id"]  # ids never reused
            assert handle.state()["faults"]["no_capacity_sizes"] == ["gpu-h200x1-141gb"]
    finally:
        handle.close()


# -- the create event ----------------------------------------------------------------------------


def test_a_new_droplet_has_a_pending_create_event_during_which_delete_answers_422(emulator, api):
    emulator.configure(boot_delay_s=60)
    response = api.post("/v2/droplets", json=BODY)
    droplet = response.json()["droplet"]
    [link] = response.json()["links"]["actions"]

    action = api.get(link["href"]).json()["action"]
    refused = api.delete(f"/v2/droplets/{droplet['id']}")
    listed = api.get(f"/v2/droplets/{droplet['id']}/actions").json()["actions"]

    assert link["rel"] == "create" and link["href"].endswith(f"/v2/actions/{link['id']}")
    assert (action["id"], action["type"], action["status"]) == (link["id"], "create", "in-progress")
    assert action["resource_id"] == droplet["id"] and action["resource_type"] == "droplet"
    assert action["completed_at"] is None and action["region_slug"] == "tor1"
    assert refused.status_code == 422
    assert refused.json()["id"] == "unprocessable_entity"
    assert refused.json()["message"] == "Droplet already has a pending event."
    assert [a["id"] for a in listed] == [link["id"]]
    assert [d["id"] for d in emulator.droplets()] == [droplet["id"]]  # nothing was deleted
    # `locked` while the create event runs (the spec's "Droplet Actions" tag description)
    assert droplet["status"] == "new" and droplet["locked"] is True


def test_the_create_event_completes_when_the_droplet_boots_and_delete_then_works(emulator, api):
    emulator.configure(boot_delay_s=0.3)
    response = api.post("/v2/droplets", json=BODY)
    droplet_id = response.json()["droplet"]["id"]
    href = response.json()["links"]["actions"][0]["href"]

    action = wait_until(
        lambda: (a := api.get(href).json()["action"])["status"] == "completed" and a
    )

    assert api.get(f"/v2/droplets/{droplet_id}").json()["droplet"]["status"] == "active"
    assert action["completed_at"] is not None
    assert api.delete(f"/v2/droplets/{droplet_id}").status_code == 204
    # the action outlives its droplet, as DigitalOcean's do
    assert api.get(href).json()["action"]["status"] == "completed"


def test_a_droplet_that_never_boots_ends_with_an_errored_create_event(emulator, api):
    emulator.configure(boot_delay_s=0.2)
    emulator.set_faults(never_boot=True)
    response = api.post("/v2/droplets", json=BODY)
    droplet_id = response.json()["droplet"]["id"]
    href = response.json()["links"]["actions"][0]["href"]

    wait_until(lambda: api.get(href).json()["action"]["status"] == "errored")

    assert api.get(f"/v2/droplets/{droplet_id}").json()["droplet"]["status"] == "new"
    assert api.delete(f"/v2/droplets/{droplet_id}").status_code == 204


def test_delete_by_tag_refuses_while_a_tagged_droplet_is_being_created(emulator, api):
    emulator.configure(boot_delay_s=60)
    booted = create(api, name="labgpu-node-2")
    emulator.activate(booted["id"])
    pending = create(api)
    api.post("/v2/droplets", json={**BODY, "name": "labgpu-node-3"})

    refused = api.delete("/v2/droplets", params={"tag_name": "labgpu-node-1"})

    assert refused.status_code == 422 and "pending event" in refused.json()["message"]
    assert pending["id"] in [d["id"] for d in emulator.droplets()]
    assert len(emulator.droplets()) == 3  # all or nothing


def test_unknown_actions_are_404(api):
    assert api.get("/v2/actions/123").status_code == 404
    assert api.get("/v2/droplets/123/actions").status_code == 404


def test_the_default_boot_takes_minutes_and_a_shortened_one_is_logged(tmp_path):
    realistic = start_emulator(tmp_path / "realistic", boot_delay_s=None, agent_cmd="")
    try:
        with httpx.Client(base_url=realistic.url, headers=AUTH) as client:
            droplet = client.post("/v2/droplets", json=BODY).json()["droplet"]
        [seen] = realistic.droplets()
        assert droplet["status"] == "new"
        assert seen["active_at"] - seen["created_at"] >= 120  # minutes, not seconds
        assert "SHORTENED" not in realistic.log_tail()
    finally:
        realistic.close()
    shortened = start_emulator(tmp_path / "short", boot_delay_s=0.5, agent_cmd="")
    try:
        assert "SHORTENED boot time" in shortened.log_tail()
    finally:
        shortened.close()


def test_make_run_and_the_emulator_target_shorten_the_boot_explicitly():
    repo = Path(__file__).resolve().parents[3]
    procfile = (repo / "backend" / "Procfile").read_text()
    [emulator_line] = [line for line in procfile.splitlines() if line.startswith("emulator:")]
    makefile = (repo / "Makefile").read_text()
    emulator_target = makefile[makefile.index("\nemulator:") :].split("\n\n")[0]

    assert "--boot-delay" in emulator_line
    assert "--boot-delay" in emulator_target


# -- the account: SSH keys and images --------------------------------------------------------------


@pytest.fixture
def public_key(tmp_path) -> tuple[str, str]:
    """A fresh ed25519 key and its MD5 fingerprint as ssh-keygen (not the emulator) computes it."""
    path = tmp_path / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice@lab", "-f", str(path)],
        check=True,
    )
    listing = subprocess.run(
        ["ssh-keygen", "-l", "-E", "md5", "-f", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    fingerprint = listing.split()[1].removeprefix("MD5:")
    return (tmp_path / "id_ed25519.pub").read_text().strip(), fingerprint


def test_ssh_keys_are_accepted_only_once_registered_on_the_account(emulator, api, public_key):
    key_text, fingerprint = public_key
    before = api.post("/v2/droplets", json={**BODY, "ssh_keys": [fingerprint]})

    registered = api.post("/v2/account/keys", json={"name": "alice", "public_key": key_text})
    key = registered.json()["ssh_key"]
    by_id = api.post(
        "/v2/droplets", json={**BODY, "name": "labgpu-node-2", "ssh_keys": [key["id"]]}
    )
    by_fingerprint = api.post(
        "/v2/droplets", json={**BODY, "name": "labgpu-node-3", "ssh_keys": [fingerprint]}
    )
    raw = api.post("/v2/droplets", json={**BODY, "name": "labgpu-node-4", "ssh_keys": [key_text]})
    again = api.post("/v2/account/keys", json={"name": "alice again", "public_key": key_text})

    assert before.status_code == 422 and "invalid key identifiers" in before.json()["message"]
    assert registered.status_code == 201 and key["fingerprint"] == fingerprint
    assert by_id.status_code == 202 and by_fingerprint.status_code == 202
    assert raw.status_code == 422  # the API takes ids or fingerprints, never the key itself
    assert again.status_code == 422
    listed = api.get("/v2/account/keys").json()["ssh_keys"]
    assert [k["id"] for k in listed] == [key["id"]]
    assert {d["name"] for d in emulator.droplets()} == {"labgpu-node-2", "labgpu-node-3"}


def test_images_are_only_available_in_their_regions(api):
    amd_in_ams3 = api.post(
        "/v2/droplets",
        json={**BODY, "size": "gpu-h100x1-80gb", "region": "ams3", "image": "gpu-amd-base"},
    )
    nvidia_in_ams3 = api.post(
        "/v2/droplets",
        json={**BODY, "size": "gpu-h100x1-80gb", "region": "ams3", "image": "gpu-h100x1-base"},
    )

    assert amd_in_ams3.status_code == 422
    assert amd_in_ams3.json()["message"] == "You specified an invalid image for Droplet creation."
    assert nvidia_in_ams3.status_code == 202


# -- stock per region x size -----------------------------------------------------------------------

MI300X = "gpu-mi300x1-192gb"


def size_entry(api, slug: str) -> dict:
    return {s["slug"]: s for s in api.get("/v2/sizes", params={"per_page": 200}).json()["sizes"]}[
        slug
    ]


def test_a_region_runs_out_of_stock_and_comes_back(emulator, api):
    emulator.set_stock(MI300X, "tor1", 1)
    first = create(api)

    refused = api.post("/v2/droplets", json={**BODY, "name": "labgpu-node-2"})
    listed = size_entry(api, MI300X)
    tor1 = next(r for r in api.get("/v2/regions").json()["regions"] if r["slug"] == "tor1")

    assert refused.status_code == 422
    assert refused.json()["id"] == "unprocessable_entity"
    assert refused.json()["message"] == "Size is not available in this region."
    assert refused.json()["error_attributes"]["available_regions"] == ["atl1", "nyc2"]
    assert listed["regions"] == ["atl1", "nyc2"] and listed["available"] is True
    assert MI300X not in tor1["sizes"]

    emulator.activate(first["id"])
    assert api.delete(f"/v2/droplets/{first['id']}").status_code == 204  # the machine is freed
    assert "tor1" in size_entry(api, MI300X)["regions"]
    assert api.post("/v2/droplets", json={**BODY, "name": "labgpu-node-3"}).status_code == 202


def test_a_size_out_of_stock_everywhere_is_shown_unavailable_until_restocked(emulator, api):
    for region in ("atl1", "tor1", "nyc2"):
        emulator.set_stock(MI300X, region, 0)

    empty = size_entry(api, MI300X)
    refused = api.post("/v2/droplets", json=BODY)
    emulator.set_stock(MI300X, "tor1", None)  # lift the limit: unlimited again

    assert (empty["regions"], empty["available"]) == ([], False)
    assert refused.status_code == 422
    assert refused.json()["error_attributes"]["available_regions"] == []
    assert size_entry(api, MI300X)["regions"] == ["tor1"]
    assert api.post("/v2/droplets", json=BODY).status_code == 202


def test_invalid_stock_changes_are_refused(emulator):
    for bad in ({"gpu-nope": {"tor1": 1}}, {MI300X: {"mars1": 1}}, {MI300X: {"tor1": -1}}):
        response = httpx.post(f"{emulator.url}/_emulator/faults", json={"stock": bad})
        assert response.status_code == 400, bad


def test_stock_set_on_the_command_line_survives_a_reset(tmp_path):
    handle = start_emulator(tmp_path / "emu", agent_cmd="", stock={MI300X: {"tor1": 0}})
    try:
        with httpx.Client(base_url=handle.url, headers=AUTH) as client:
            assert client.post("/v2/droplets", json=BODY).status_code == 422
            handle.set_stock(MI300X, "tor1", 1)
            assert client.post("/v2/droplets", json=BODY).status_code == 202
            handle.reset()
            assert client.post("/v2/droplets", json=BODY).status_code == 422
    finally:
        handle.close()


# -- the node agent ------------------------------------------------------------------------------

FAKE_AGENT = textwrap.dedent(
    """
    import json, os, sys, time
    droplet_id = os.environ["LABGPU_EMULATOR_DROPLET_ID"]
    out = os.path.join(os.environ["FAKE_AGENT_OUT"], droplet_id + ".json")
    # written whole, then renamed: a test polling for the file never reads it half-written
    with open(out + ".tmp", "w") as fh:
        json.dump({"argv": sys.argv[1:], "pid": os.getpid(),
                   "state_dir": os.environ.get("LABGPU_AGENT_STATE_DIR"),
                   "idle_after": os.environ.get("LABGPU_FIXTURE_IDLE_AFTER"),
                   "data_gb": os.environ.get("LABGPU_FIXTURE_DATA_GB")}, fh)
    os.replace(out + ".tmp", out)
    time.sleep(120)
    """
)


@pytest.fixture
def fake_agent(tmp_path):
    script = tmp_path / "fake_agent.py"
    script.write_text(FAKE_AGENT)
    out = tmp_path / "agent-out"
    out.mkdir()
    return f"{sys.executable} {script}", out


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by the emulator) counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_active_droplet_starts_the_agent_with_api_token_and_size_profile(tmp_path, fake_agent):
    agent_cmd, out = fake_agent
    handle = start_emulator(
        tmp_path / "emu", boot_delay_s=0.1, agent_cmd=agent_cmd, env={"FAKE_AGENT_OUT": str(out)}
    )
    try:
        user_data = render_user_data(
            api_url="http://127.0.0.1:8000", bootstrap_token="bt_abcdef123456"
        )
        with httpx.Client(base_url=handle.url, headers=AUTH) as client:
            mi350 = client.post(
                "/v2/droplets",
                json={
                    **BODY,
                    "size": "gpu-mi350x1-288gb",
                    "region": "atl1",
                    "user_data": user_data,
                },
            ).json()["droplet"]
            report = wait_until(
                lambda: (
                    (out / f"{mi350['id']}.json").exists()
                    and json.loads((out / f"{mi350['id']}.json").read_text())
                )
            )

            assert report["argv"] == [
                "run",
                "--api",
                "http://127.0.0.1:8000",
                "--token",
                "bt_abcdef123456",
                "--fixture-profile",
                "healthy-mi350x",
            ]
            assert report["state_dir"]
            [info] = handle.droplets()
            assert (
                info["agent"]["status"] == "running"
                and info["agent"]["profile"] == "healthy-mi350x"
            )

            client.delete(f"/v2/droplets/{mi350['id']}")
            wait_until(lambda: not alive(report["pid"]))
    finally:
        handle.close()


def test_agent_profile_comes_from_user_data_then_per_name_override(tmp_path, fake_agent):
    agent_cmd, out = fake_agent
    handle = start_emulator(
        tmp_path / "emu", boot_delay_s=0.1, agent_cmd=agent_cmd, env={"FAKE_AGENT_OUT": str(out)}
    )
    try:
        handle.set_faults(agent_profiles={"labgpu-node-2": "faulty-ecc", "labgpu-node-3": "none"})
        with httpx.Client(base_url=handle.url, headers=AUTH) as client:
            ids = {}
            for node, profile in ((1, "hot-mi300x"), (2, "hot-mi300x"), (3, None)):
                user_data = render_user_data(
                    api_url="http://127.0.0.1:8000",
                    bootstrap_token=f"bt_node{node}_123456",
                    agent_profile=profile,
                )
                body = {**BODY, "name": f"labgpu-node-{node}", "user_data": user_data}
                ids[node] = client.post("/v2/droplets", json=body).json()["droplet"]["id"]

            def reported(node: int) -> dict:
                path = out / f"{ids[node]}.json"
                return path.exists() and json.loads(path.read_text())

            assert wait_until(lambda: reported(1))["argv"][-1] == "hot-mi300x"
            assert wait_until(lambda: reported(2))["argv"][-1] == "faulty-ecc"
            by_name = {d["name"]: d for d in handle.droplets()}
            assert by_name["labgpu-node-3"]["agent"]["status"] == "disabled"
            pids = [reported(1)["pid"], reported(2)["pid"]]
    finally:
        handle.close()
    # stopping the emulator stops its agents
    assert not any(alive(pid) for pid in pids)


def test_only_agents_of_droplets_with_an_idle_tag_are_told_to_go_idle(tmp_path, fake_agent):
    """`make run`'s demo: --idle-after TAG=N sends the agents of droplets carrying TAG idle after N
    heartbeats; other droplets' agents keep reporting use (and never inherit the variable)."""
    agent_cmd, out = fake_agent
    handle = start_emulator(
        tmp_path / "emu",
        boot_delay_s=0.1,
        agent_cmd=agent_cmd,
        env={"FAKE_AGENT_OUT": str(out), "LABGPU_FIXTURE_IDLE_AFTER": "1"},
        idle_after={"labgpu-type-h100-1": 4},
    )
    try:
        with httpx.Client(base_url=handle.url, headers=AUTH) as client:
            ids = {}
            for name, tags in (("idle", ["labgpu", "labgpu-type-h100-1"]), ("busy", ["labgpu"])):
                user_data = render_user_data(
                    api_url="http://127.0.0.1:8000", bootstrap_token=f"bt_{name}_1234567"
                )
                body = {**BODY, "name": name, "tags": tags, "user_data": user_data}
                ids[name] = client.post("/v2/droplets", json=body).json()["droplet"]["id"]

            def reported(name: str) -> dict:
                path = out / f"{ids[name]}.json"
                return path.exists() and json.loads(path.read_text())

            assert wait_until(lambda: reported("idle"))["idle_after"] == "4"
            assert wait_until(lambda: reported("busy"))["idle_after"] is None
            # The start-up tags survive a reset of the faults.
            assert handle.clear_faults()["idle_after"] == {"labgpu-type-h100-1": 4}
            refused = client.post("/_emulator/faults", json={"idle_after": {"x": -1}})
            assert refused.status_code == 400
    finally:
        handle.close()


def test_the_agent_of_a_droplet_with_a_volume_reports_its_size_as_data(tmp_path, fake_agent):
    """Fixture agents have nothing mounted: the emulator tells them the attached volume's size,
    so `make run` shows used space on the volume list (LABGPU_FIXTURE_DATA_GB)."""
    agent_cmd, out = fake_agent
    handle = start_emulator(
        tmp_path / "emu",
        boot_delay_s=0.1,
        agent_cmd=agent_cmd,
        env={"FAKE_AGENT_OUT": str(out), "LABGPU_FIXTURE_DATA_GB": "7"},
    )
    try:
        with httpx.Client(base_url=handle.url, headers=AUTH) as client:
            volume = client.post(
                "/v2/volumes",
                json={"name": "labgpu-u1-tor1", "region": "tor1", "size_gigabytes": 40},
            ).json()["volume"]
            ids = {}
            for name, volumes in (("with", [volume["id"]]), ("without", [])):
                user_data = render_user_data(
                    api_url="http://127.0.0.1:8000", bootstrap_token=f"bt_{name}_1234567"
                )
                body = {**BODY, "name": name, "user_data": user_data, "volumes": volumes}
                ids[name] = client.post("/v2/droplets", json=body).json()["droplet"]["id"]

            def reported(name: str) -> dict:
                path = out / f"{ids[name]}.json"
                return path.exists() and json.loads(path.read_text())

            assert wait_until(lambda: reported("with"))["data_gb"] == "40"
            assert wait_until(lambda: reported("without"))["data_gb"] is None
    finally:
        handle.close()


def test_a_missing_agent_executable_does_not_stop_the_droplet_booting(tmp_path):
    handle = start_emulator(tmp_path / "emu", boot_delay_s=0.1, agent_cmd="no-such-labgpu-agent")
    try:
        user_data = render_user_data(
            api_url="http://127.0.0.1:8000", bootstrap_token="bt_abcdef123456"
        )
        with httpx.Client(base_url=handle.url, headers=AUTH) as client:
            droplet = client.post("/v2/droplets", json={**BODY, "user_data": user_data}).json()[
                "droplet"
            ]
            wait_until(
                lambda: (
                    client.get(f"/v2/droplets/{droplet['id']}").json()["droplet"]["status"]
                    == "active"
                )
            )
        [info] = handle.droplets()
        assert info["agent"]["status"] == "missing"
        assert "not found" in handle.log_tail()
    finally:
        handle.close()


def test_agents_outlive_a_crashed_emulator_and_are_adopted_after_its_restart(tmp_path, fake_agent):
    agent_cmd, out = fake_agent
    handle = start_emulator(
        tmp_path / "emu", boot_delay_s=0.1, agent_cmd=agent_cmd, env={"FAKE_AGENT_OUT": str(out)}
    )
    try:
        user_data = render_user_data(
            api_url="http://127.0.0.1:8000", bootstrap_token="bt_abcdef123456"
        )
        with httpx.Client(base_url=handle.url, headers=AUTH) as client:
            droplet = client.post("/v2/droplets", json={**BODY, "user_data": user_data}).json()[
                "droplet"
            ]
            report_file = out / f"{droplet['id']}.json"
            pid = wait_until(lambda: report_file.exists() and json.loads(report_file.read_text()))[
                "pid"
            ]

            handle.kill()  # like a crashed provider API: the node's agent keeps running
            assert alive(pid)
            handle.start()

            [info] = handle.droplets()
            assert info["agent"]["status"] == "running" and info["agent"]["pid"] == pid
            assert info["agent"]["starts"] == 1  # adopted, not started twice
            client.delete(f"/v2/droplets/{droplet['id']}")
            wait_until(lambda: not alive(pid))
    finally:
        handle.close()

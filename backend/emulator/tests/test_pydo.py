"""DigitalOcean's own Python client, `pydo` (a pinned test extra), drives the emulator: whatever it
asks, the emulator answers as DigitalOcean documents it. Every answer is validated against
DigitalOcean's OpenAPI description where the cut-down one in ../shared describes its path
(emulator.contract; off, and said so at the end, without it). Three paths lie outside that cut:
`GET /v2/images/{image_id}`, `GET /v2/actions` and `GET /v2/account/keys/{ssh_key_identifier}`;
their shapes are asserted here from DigitalOcean's full description (digitalocean/openapi@7c1300c4,
specification/resources/{images/images_get,actions/actions_list,ssh_keys/sshKeys_get}.yml)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from emulator import contract

pydo = pytest.importorskip("pydo")
from azure.core.exceptions import HttpResponseError  # noqa: E402  (pydo's transport)

pytestmark = pytest.mark.slow  # a live emulator subprocess

SIZE, IMAGE = "gpu-mi300x1-192gb", "gpu-amd-base"
#: pydo over plain http to loopback: azure-core refuses bearer tokens there unless told
OPTS = {"enforce_https": False}
#: (method, path template) pydo reaches that the cut-down spec in ../shared leaves out
OUTSIDE_THE_CUT = {
    ("GET", "/v2/images/{image_id}"),
    ("GET", "/v2/actions"),
    ("GET", "/v2/account/keys/{ssh_key_identifier}"),
}


class Validating:
    """pydo's raw_response_hook: every answer checked against the spec (when it is here)."""

    def __init__(self, validate: bool) -> None:
        self.validate = validate
        self.problems: list[str] = []
        self.outside: set[tuple[str, str]] = set()
        self.headers: list[tuple[int, dict[str, str]]] = []
        self.bodies: list[bytes] = []

    def __call__(self, pipeline_response: Any) -> None:
        request, response = pipeline_response.http_request, pipeline_response.http_response
        headers = {k.lower(): v for k, v in response.headers.items()}
        self.headers.append((response.status_code, headers))
        self.bodies.append(response.body())
        if not self.validate:
            return
        from openapi_core.templating.paths.exceptions import PathNotFound

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
        except PathNotFound:
            self.outside.add((request.method, _template(request.url)))
        except Exception as exc:
            self.problems.append(f"{request.method} {request.url} -> {response.status_code}: {exc}")


def _template(url: str) -> str:
    path = url.split("://", 1)[-1].split("/", 1)[-1].split("?", 1)[0]
    parts = path.split("/")
    if parts[:2] == ["v2", "images"] and len(parts) == 3:
        return "/v2/images/{image_id}"
    if parts[:3] == ["v2", "account", "keys"] and len(parts) == 4:
        return "/v2/account/keys/{ssh_key_identifier}"
    return "/" + path


@pytest.fixture
def hook(request: pytest.FixtureRequest) -> Iterator[Validating]:
    recorder = Validating(contract.validation_on(request.node))
    yield recorder
    assert recorder.problems == []
    assert recorder.outside <= OUTSIDE_THE_CUT


@pytest.fixture
def do(emulator, hook) -> Any:
    # retry_total=0: pydo's default policy would resend a POST /v2/droplets after a 5xx or 429
    return pydo.Client("pydo-token", endpoint=emulator.url, retry_total=0, raw_response_hook=hook)


@pytest.fixture
def key_pair(tmp_path) -> str:
    path = tmp_path / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "lab@example.org", "-f", str(path)],
        check=True,
    )
    return (tmp_path / "id_ed25519.pub").read_text().strip()


def refused(hook: Validating, call: Any) -> tuple[int, dict[str, Any]]:
    """The status and body of a refused call. pydo raises for most errors but returns the body of
    the ones an operation documents (a 404 of images_get, say), so the answer is read off the
    wire, and it must be an error."""
    with contextlib.suppress(HttpResponseError):
        call()
    status = hook.headers[-1][0]
    assert status >= 400, status
    return status, json.loads(hook.bodies[-1] or b"{}")


def body(name: str, region: str = "tor1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "region": region, "size": SIZE, "image": IMAGE, **extra}


def test_sizes_regions_and_images_agree_with_where_a_create_succeeds(emulator, do, hook):
    sizes = {s["slug"]: s for s in do.sizes.list(per_page=200, **OPTS)["sizes"]}
    regions = [r["slug"] for r in do.regions.list(per_page=200, **OPTS)["regions"]]
    images = do.images.list(per_page=200, **OPTS)
    by_slug = {i["slug"]: i for i in images["images"]}
    assert images["meta"]["total"] == len(images["images"])
    assert SIZE in sizes and sizes[SIZE]["gpu_info"]["count"] == 1
    image = by_slug[IMAGE]

    # by slug and by id, as the spec's images_get allows for public images; the same image
    assert do.images.get(image_id=IMAGE, **OPTS)["image"] == image
    assert do.images.get(image_id=image["id"], **OPTS)["image"] == image
    assert refused(hook, lambda: do.images.get(image_id="no-such-image", **OPTS))[0] == 404
    assert do.images.list(type="distribution", **OPTS)["images"]  # ours are OS (base) images
    assert do.images.list(type="application", **OPTS)["images"] == []
    assert do.images.list(private=True, **OPTS)["images"] == []

    # Where the image and the size are both listed, a create succeeds; elsewhere it is refused.
    succeeded = set()
    for n, region in enumerate(regions):
        with contextlib.suppress(HttpResponseError):
            do.droplets.create(body=body(f"labgpu-probe-{n}", region), **OPTS)
        if hook.headers[-1][0] == 202:
            succeeded.add(region)
        else:
            assert hook.headers[-1][0] == 422, hook.bodies[-1]
    assert succeeded == set(image["regions"]) & set(sizes[SIZE]["regions"])
    assert "atl1" in succeeded  # DigitalOcean's AMD GPU region, listed by the image too
    assert {d["region"] for d in emulator.droplets()} == succeeded


def test_ssh_keys_are_read_back_by_id_and_by_fingerprint(do, hook, key_pair):
    made = do.ssh_keys.create(body={"name": "lab", "public_key": key_pair}, **OPTS)["ssh_key"]

    assert do.ssh_keys.get(ssh_key_identifier=made["id"], **OPTS)["ssh_key"] == made
    assert do.ssh_keys.get(ssh_key_identifier=made["fingerprint"], **OPTS)["ssh_key"] == made
    assert [k["id"] for k in do.ssh_keys.list(**OPTS)["ssh_keys"]] == [made["id"]]
    # sshKeys_get's attributes (the full spec's ssh_keys model): id, fingerprint, public_key, name
    assert set(made) >= {"id", "fingerprint", "public_key", "name"}
    assert refused(hook, lambda: do.ssh_keys.get(ssh_key_identifier=999999, **OPTS))[0] == 404


def test_a_gpu_droplet_is_created_polled_listed_and_deleted_during_boot_and_after(
    emulator, do, hook, key_pair
):
    emulator.configure(boot_delay_s=120)  # a boot that outlasts the test's first half
    key = do.ssh_keys.create(body={"name": "lab", "public_key": key_pair}, **OPTS)["ssh_key"]
    answer = do.droplets.create(
        body=body("labgpu-node-7", ssh_keys=[key["id"]], tags=["labgpu", "labgpu-node-7"]), **OPTS
    )
    droplet, [link] = answer["droplet"], answer["links"]["actions"]
    assert (droplet["status"], droplet["tags"]) == ("new", ["labgpu", "labgpu-node-7"])
    # "If a Droplet action is uncompleted … the locked attribute of the Droplet will be true"
    assert droplet["locked"] is True
    action = do.actions.get(action_id=link["id"], **OPTS)["action"]
    assert (action["type"], action["status"], action["resource_id"]) == (
        "create",
        "in-progress",
        droplet["id"],
    )
    assert [a["id"] for a in do.actions.list(**OPTS)["actions"]] == [link["id"]]

    status, error = refused(hook, lambda: do.droplets.destroy(droplet_id=droplet["id"], **OPTS))
    assert status == 422 and "pending event" in error["message"]
    assert [d["id"] for d in emulator.droplets()] == [droplet["id"]]  # nothing was deleted

    emulator.activate(droplet["id"])  # the boot ends now
    polled = do.droplets.get(droplet_id=droplet["id"], **OPTS)["droplet"]
    assert (polled["status"], polled["locked"]) == ("active", False)
    assert any(n["type"] == "public" for n in polled["networks"]["v4"])
    assert do.actions.get(action_id=link["id"], **OPTS)["action"]["status"] == "completed"
    gpus = do.droplets.list(type="gpus", per_page=200, **OPTS)["droplets"]
    assert [d["id"] for d in gpus] == [droplet["id"]]
    assert do.droplets.list(per_page=200, **OPTS)["droplets"] == []  # not without type=gpus

    do.droplets.destroy(droplet_id=droplet["id"], **OPTS)

    assert refused(hook, lambda: do.droplets.get(droplet_id=droplet["id"], **OPTS))[0] == 404
    [entry] = emulator.ledger()
    assert entry["delete_requested_at"] is not None and entry["gone_at"] is not None


def test_a_droplet_is_locked_while_its_shutdown_runs(emulator, do):
    emulator.configure(boot_delay_s=0.0, shutdown_s=0.5)
    droplet = do.droplets.create(body=body("labgpu-node-8"), **OPTS)["droplet"]
    emulator.activate(droplet["id"])

    action = do.droplet_actions.post(droplet_id=droplet["id"], body={"type": "shutdown"}, **OPTS)
    assert do.droplets.get(droplet_id=droplet["id"], **OPTS)["droplet"]["locked"] is True

    deadline = time.monotonic() + 10
    while do.actions.get(action_id=action["action"]["id"], **OPTS)["action"]["status"] != (
        "completed"
    ):
        assert time.monotonic() < deadline, "the shutdown never completed"
        time.sleep(0.1)
    after = do.droplets.get(droplet_id=droplet["id"], **OPTS)["droplet"]
    assert (after["status"], after["locked"]) == ("off", False)


def test_several_droplets_are_created_at_once_with_names(emulator, do, hook):
    names = ["labgpu-node-20", "labgpu-node-21", "labgpu-node-22"]
    answer = do.droplets.create(
        body={"names": names, "region": "tor1", "size": SIZE, "image": IMAGE, "tags": ["labgpu"]},
        **OPTS,
    )

    assert [d["name"] for d in answer["droplets"]] == names
    assert len({a["id"] for a in answer["links"]["actions"]}) == 3
    listed = do.droplets.list(type="gpus", per_page=200, **OPTS)["droplets"]
    assert sorted(d["name"] for d in listed) == names
    assert {tuple(d["tags"]) for d in emulator.droplets()} == {("labgpu",)}
    # "Up to ten Droplets may be created this way at a time" (the spec's droplets_create)
    eleven = [f"labgpu-node-{n}" for n in range(30, 41)]
    too_many = {"names": eleven, "region": "tor1", "size": SIZE, "image": IMAGE}
    assert refused(hook, lambda: do.droplets.create(body=too_many, **OPTS))[0] == 422
    # all or none: one bad name creates nothing
    bad = {"names": ["labgpu-node-50", "bad name!"], "region": "tor1", "size": SIZE, "image": IMAGE}
    assert refused(hook, lambda: do.droplets.create(body=bad, **OPTS))[0] == 422
    assert len(emulator.droplets()) == 3


def test_rate_limit_headers_describe_both_windows_and_401s(emulator, do, hook):
    emulator.configure(rate_limit=2, rate_window_s=60)
    do.sizes.list(**OPTS)
    do.sizes.list(**OPTS)
    status, error = refused(hook, lambda: do.sizes.list(**OPTS))

    assert status == 429 and error["id"] == "too_many_requests"
    statuses = [status for status, _ in hook.headers]
    ok, _, refused_headers = (headers for _, headers in hook.headers[-3:])
    assert statuses[-3:] == [200, 200, 429]
    assert ok["ratelimit-limit"] == "5000" and ok["ratelimit-remaining"] == "4999"
    # DigitalOcean's "Sample Rate Limit Headers When Burst Limit is Reached": remaining 0 and
    # retry-after, the limit and reset still the hour's
    assert refused_headers["ratelimit-remaining"] == "0"
    assert 1 <= int(refused_headers["retry-after"]) <= 60
    assert int(refused_headers["ratelimit-reset"]) > time.time() + 3500

    emulator.configure(rate_limit=250, rate_limit_hourly=3)  # 2 of the hour already spent
    do.regions.list(**OPTS)
    assert refused(hook, lambda: do.regions.list(**OPTS))[0] == 429
    _, spent = hook.headers[-1]
    assert spent["ratelimit-remaining"] == "0" and "retry-after" not in spent

    emulator.configure(tokens=["the-right-token"], rate_limit_hourly=5000)
    wrong = pydo.Client(
        "a-wrong-token", endpoint=emulator.url, retry_total=0, raw_response_hook=hook
    )
    status, error = refused(hook, lambda: wrong.sizes.list(**OPTS))
    assert status == 401 and error["id"] == "unauthorized"
    _, unauthorized = hook.headers[-1]
    assert {"ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"} <= set(unauthorized)
    assert unauthorized["ratelimit-remaining"] == "4999"  # the wrong token's own first request

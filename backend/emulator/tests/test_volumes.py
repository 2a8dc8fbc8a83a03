"""Block-storage volumes over real HTTP: DigitalOcean's endpoints and prose rules, every exchange
checked against DigitalOcean's own OpenAPI description (../shared/contracts)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from emulator.contract import ExchangeRecorder, validation_on

pytestmark = pytest.mark.slow  # a live emulator subprocess (see pyproject markers)

AUTH = {"Authorization": "Bearer emulator-test-token"}
DROPLET = {
    "name": "labgpu-node-1",
    "region": "tor1",
    "size": "gpu-mi300x1-192gb",
    "image": "gpu-amd-base",
    "tags": ["labgpu-node-1"],
}


@pytest.fixture
def recorder(request: pytest.FixtureRequest) -> Iterator[ExchangeRecorder]:
    validate = validation_on(request.node)  # no spec: runs, validation off, said at the end
    rec = ExchangeRecorder()
    yield rec
    if validate:
        rec.assert_valid()  # every request we sent and every answer the emulator gave


@pytest.fixture
def api(emulator, recorder) -> Iterator[httpx.Client]:
    emulator.configure(boot_delay_s=0.0, volume_action_s=0.0)
    with httpx.Client(
        base_url=emulator.url, headers=AUTH, timeout=10, event_hooks=recorder.hooks
    ) as client:
        yield client


def volume(api: httpx.Client, name: str = "labgpu-u1-tor1", region: str = "tor1", **extra) -> dict:
    body = {"name": name, "region": region, "size_gigabytes": 10, "tags": ["labgpu-volume"]}
    response = api.post("/v2/volumes", json={**body, **extra})
    assert response.status_code == 201, response.text
    return response.json()["volume"]


def droplet(api: httpx.Client, name: str = "labgpu-node-1", **extra) -> dict:
    response = api.post("/v2/droplets", json={**DROPLET, "name": name, "tags": [name], **extra})
    assert response.status_code == 202, response.text
    return response.json()["droplet"]


def act(api: httpx.Client, volume_id: str, **body) -> httpx.Response:
    return api.post(f"/v2/volumes/{volume_id}/actions", json=body)


def test_volumes_are_created_listed_by_name_and_region_and_fetched(api):
    made = volume(api)
    volume(api, name="labgpu-u2-tor1")
    volume(api, name="labgpu-u1-tor1", region="nyc3")  # the same name in another region

    by_name = api.get("/v2/volumes", params={"name": "labgpu-u1-tor1"}).json()["volumes"]
    by_both = api.get("/v2/volumes", params={"name": "labgpu-u1-tor1", "region": "tor1"})
    by_region = api.get("/v2/volumes", params={"region": "tor1"}).json()["volumes"]
    fetched = api.get(f"/v2/volumes/{made['id']}").json()["volume"]

    assert sorted(v["region"]["slug"] for v in by_name) == ["nyc3", "tor1"]
    assert [v["id"] for v in by_both.json()["volumes"]] == [made["id"]]
    assert {v["name"] for v in by_region} == {"labgpu-u1-tor1", "labgpu-u2-tor1"}
    assert fetched["size_gigabytes"] == 10 and fetched["droplet_ids"] == []
    assert fetched["tags"] == ["labgpu-volume"]


def test_one_name_per_region_is_refused_with_409(api):
    volume(api)

    again = api.post(
        "/v2/volumes", json={"name": "labgpu-u1-tor1", "region": "tor1", "size_gigabytes": 20}
    )

    assert again.status_code == 409
    assert again.json()["id"] == "conflict"


@pytest.mark.parametrize("name", ["Upper", "1starts-with-digit", "under_score", "x" * 65])
def test_volume_names_follow_the_prose_rule(api, recorder, name):
    response = api.post("/v2/volumes", json={"name": name, "region": "tor1", "size_gigabytes": 1})

    assert response.status_code == 422
    assert "lowercase" in response.json()["message"]


def test_a_volume_is_attached_to_one_droplet_only_and_detached_by_name(emulator, api):
    vol = volume(api)
    first, second = droplet(api), droplet(api, name="labgpu-node-2")

    attached = act(api, vol["id"], type="attach", droplet_id=first["id"], region="tor1")
    refused = act(api, vol["id"], type="attach", droplet_id=second["id"])
    shown = api.get(f"/v2/droplets/{first['id']}").json()["droplet"]

    assert attached.status_code == 202
    assert attached.json()["action"]["type"] == "attach_volume"
    assert refused.status_code == 422 and "already attached" in refused.json()["message"]
    assert shown["volume_ids"] == [vol["id"]]
    assert api.get(f"/v2/volumes/{vol['id']}").json()["volume"]["droplet_ids"] == [first["id"]]

    detached = api.post(
        "/v2/volumes/actions",
        json={
            "type": "detach",
            "volume_name": vol["name"],
            "droplet_id": first["id"],
            "region": "tor1",
        },
    )
    assert detached.status_code == 202
    action_id = detached.json()["action"]["id"]
    status = api.get(f"/v2/volumes/{vol['id']}/actions/{action_id}").json()["action"]["status"]
    assert status == "completed"
    assert act(api, vol["id"], type="attach", droplet_id=second["id"]).status_code == 202
    listed = api.get(f"/v2/volumes/{vol['id']}/actions").json()["actions"]
    assert [a["type"] for a in listed] == ["attach_volume", "detach_volume", "attach_volume"]


def test_actions_stay_in_progress_until_the_provider_is_done(emulator, api):
    emulator.configure(volume_action_s=30)
    vol, machine = volume(api), droplet(api)

    action = act(api, vol["id"], type="attach", droplet_id=machine["id"]).json()["action"]

    assert action["status"] == "in-progress" and action["completed_at"] is None
    assert api.get(f"/v2/actions/{action['id']}").json()["action"]["status"] == "in-progress"


def test_attaching_across_regions_is_refused(api):
    vol = volume(api, region="nyc3")
    machine = droplet(api)  # tor1

    response = act(api, vol["id"], type="attach", droplet_id=machine["id"])

    assert response.status_code == 422
    assert "within its region" in response.json()["message"]


def test_an_attached_volume_is_not_deleted_by_id_or_by_name(api):
    vol = volume(api)
    machine = droplet(api)
    act(api, vol["id"], type="attach", droplet_id=machine["id"])

    by_id = api.delete(f"/v2/volumes/{vol['id']}")
    by_name = api.delete("/v2/volumes", params={"name": vol["name"], "region": "tor1"})

    assert by_id.status_code == 422 and by_name.status_code == 422
    assert api.get(f"/v2/volumes/{vol['id']}").status_code == 200


def test_deleting_by_id_and_by_name_and_region(emulator, api):
    one, two = volume(api), volume(api, name="labgpu-u2-tor1")

    assert api.delete(f"/v2/volumes/{one['id']}").status_code == 204
    assert (
        api.delete("/v2/volumes", params={"name": two["name"], "region": "tor1"}).status_code == 204
    )
    assert api.get(f"/v2/volumes/{one['id']}").status_code == 404
    assert api.delete(f"/v2/volumes/{one['id']}").status_code == 404
    assert emulator.volumes() == []
    assert all(entry["deleted_at"] for entry in emulator.volume_ledger())


def test_volumes_are_resized_only_upwards(emulator, api):
    vol = volume(api)

    down = act(api, vol["id"], type="resize", size_gigabytes=5, region="tor1")
    same = act(api, vol["id"], type="resize", size_gigabytes=10)
    up = act(api, vol["id"], type="resize", size_gigabytes=50, region="tor1")

    assert down.status_code == 422 and "upwards" in down.json()["message"]
    assert same.status_code == 422
    assert up.status_code == 202 and up.json()["action"]["type"] == "resize_volume"
    assert api.get(f"/v2/volumes/{vol['id']}").json()["volume"]["size_gigabytes"] == 50
    assert [size for _, size in emulator.volume_ledger()[0]["sizes"]] == [10, 50]


def test_snapshots_are_created_and_listed(api):
    vol = volume(api)

    made = api.post(f"/v2/volumes/{vol['id']}/snapshots", json={"name": "before-upgrade"})
    listed = api.get(f"/v2/volumes/{vol['id']}/snapshots").json()["snapshots"]

    assert made.status_code == 201
    assert made.json()["snapshot"]["resource_id"] == vol["id"]
    assert [s["name"] for s in listed] == ["before-upgrade"]


def test_droplet_create_attaches_the_volumes_it_names_and_destroy_releases_them(emulator, api):
    vol = volume(api)
    machine = droplet(api, volumes=[vol["id"]])
    assert api.get(f"/v2/volumes/{vol['id']}").json()["volume"]["droplet_ids"] == [machine["id"]]
    # "The volumes must not already be attached to an existing Droplet."
    second = api.post(
        "/v2/droplets",
        json={**DROPLET, "name": "labgpu-node-2", "tags": ["x"], "volumes": [vol["id"]]},
    )
    assert second.status_code == 422

    emulator.activate(machine["id"])
    assert api.delete(f"/v2/droplets/{machine['id']}").status_code == 204
    emulator.wait_for(lambda s: s["volumes"][0]["droplet_ids"] == [])


def test_a_droplet_create_naming_a_volume_of_another_region_is_refused(api):
    vol = volume(api, region="nyc3")

    response = api.post("/v2/droplets", json={**DROPLET, "volumes": [vol["id"]]})

    assert response.status_code == 422


def test_a_failing_detach_ends_errored_and_leaves_the_volume_attached(emulator, api):
    vol, machine = volume(api), droplet(api)
    act(api, vol["id"], type="attach", droplet_id=machine["id"])
    emulator.set_faults(volume_action_errors=["detach"])

    action = act(api, vol["id"], type="detach", droplet_id=machine["id"]).json()["action"]
    time.sleep(0.05)

    fetched = api.get(f"/v2/volumes/{vol['id']}/actions/{action['id']}").json()["action"]
    assert fetched["status"] == "errored"
    assert api.get(f"/v2/volumes/{vol['id']}").json()["volume"]["droplet_ids"] == [machine["id"]]


def test_unknown_volumes_and_actions_are_404(api):
    missing = "0b5c4a7e-0000-4000-8000-000000000000"
    vol = volume(api)

    assert api.get(f"/v2/volumes/{missing}").status_code == 404
    assert act(api, missing, type="resize", size_gigabytes=20).status_code == 404
    assert api.get(f"/v2/volumes/{vol['id']}/actions/1").status_code == 404


def test_volumes_survive_an_emulator_restart(tmp_path):
    from emulator.testing import start_emulator

    handle = start_emulator(tmp_path)
    try:
        made = handle.seed_volume("labgpu-u1-tor1", "tor1", 25)
        handle.restart()
        assert [v["id"] for v in handle.volumes()] == [made["id"]]
    finally:
        handle.close()


def test_a_shutdown_action_turns_the_droplet_off_and_other_actions_are_refused(emulator, api):
    emulator.configure(shutdown_s=0.1)
    machine = droplet(api)
    emulator.activate(machine["id"])

    shutdown = api.post(f"/v2/droplets/{machine['id']}/actions", json={"type": "shutdown"})
    reboot = api.post(f"/v2/droplets/{machine['id']}/actions", json={"type": "reboot"})

    assert shutdown.status_code == 201 and shutdown.json()["action"]["type"] == "shutdown"
    assert reboot.status_code == 422
    emulator.wait_for(lambda s: s["droplets"][0]["status"] == "off")


def test_a_volume_from_a_snapshot_is_at_least_its_size_and_blank_names_are_refused(api):
    vol = volume(api, size_gigabytes=20)
    made = api.post(
        f"/v2/volumes/{vol['id']}/snapshots", json={"name": "nightly", "tags": ["labgpu"]}
    )
    blank = api.post(f"/v2/volumes/{vol['id']}/snapshots", json={"name": "  "})
    snapshot = made.json()["snapshot"]
    body = {"region": "tor1", "snapshot_id": snapshot["id"], "tags": ["labgpu-volume"]}
    too_small = api.post("/v2/volumes", json={**body, "name": "restored", "size_gigabytes": 10})
    restored = api.post("/v2/volumes", json={**body, "name": "restored", "size_gigabytes": 20})
    ghost = "5f1e2d3c-0000-4000-8000-00000000abcd"
    unknown = api.post(
        "/v2/volumes",
        json={**body, "name": "ghost", "size_gigabytes": 20, "snapshot_id": ghost},
    )

    assert made.status_code == 201
    assert (snapshot["min_disk_size"], snapshot["regions"]) == (20, ["tor1"])
    assert snapshot["resource_type"] == "volume" and snapshot["tags"] == ["labgpu"]
    assert blank.status_code == 422
    assert too_small.status_code == 422 and "snapshot" in too_small.json()["message"]
    assert restored.status_code == 201 and restored.json()["volume"]["size_gigabytes"] == 20
    assert unknown.status_code == 404


def test_snapshots_of_an_unknown_volume_are_404(api):
    missing = "0b9d7a3e-1c2f-4e5a-8b6c-7d8e9f0a1b2c"
    assert api.get(f"/v2/volumes/{missing}/snapshots").status_code == 404
    assert api.post(f"/v2/volumes/{missing}/snapshots", json={"name": "x"}).status_code == 404

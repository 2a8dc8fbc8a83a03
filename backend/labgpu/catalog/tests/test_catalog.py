import pytest

pytestmark = pytest.mark.django_db


def test_members_read_the_catalog_and_site_admins_write_it(as_alice, as_carol, pool, instance_type):
    assert as_alice.get("/api/v1/pools/").json()["count"] == 1
    assert as_alice.get("/api/v1/instance-types/").json()["count"] == 1
    changed = as_carol.patch(f"/api/v1/pools/{pool.pk}/", {"capacity": 5}, format="json")
    assert changed.status_code == 200 and changed.json()["capacity"] == 5
    assert (
        as_alice.patch(f"/api/v1/pools/{pool.pk}/", {"capacity": 9}, format="json").status_code
        == 403
    )


def test_provider_accounts_are_site_admin_only_and_never_show_the_token(
    as_alice, as_carol, instance_type, monkeypatch
):
    monkeypatch.setenv("LABGPU_PROVIDER_TOKEN_EMULATOR", "dop_v1_supersecretvalue")
    assert as_alice.get("/api/v1/provider-accounts/").status_code == 403
    response = as_carol.get("/api/v1/provider-accounts/")
    assert response.status_code == 200
    assert response.json()["results"][0]["token_configured"] is True
    assert "supersecret" not in response.content.decode()


def test_provider_credential_must_be_an_env_var_name(as_carol):
    response = as_carol.post(
        "/api/v1/provider-accounts/",
        {"name": "DO", "kind": "digitalocean", "token_env_var": "dop_v1_abc123"},
        format="json",
    )
    assert response.status_code == 400
    assert "token_env_var" in response.json()["extra"]["fields"]


def test_pools_closed_to_a_lab_are_hidden_from_it(as_alice, pool, other_lab):
    pool.allowed_labs.set([other_lab])
    assert as_alice.get("/api/v1/pools/").json()["count"] == 0


def test_pool_rules_are_validated(as_carol, pool):
    response = as_carol.patch(
        f"/api/v1/pools/{pool.pk}/",
        {"min_duration_minutes": 600, "max_duration_minutes": 60},
        format="json",
    )
    assert response.status_code == 400
    assert "max_duration_minutes" in response.json()["extra"]["fields"]


def test_blackouts_reject_naive_and_inverted_times(as_carol, pool):
    naive = as_carol.post(
        "/api/v1/blackouts/",
        {"pool": pool.pk, "start": "2030-01-01T00:00:00", "end": "2030-01-01T02:00:00Z"},
        format="json",
    )
    assert naive.json()["code"] == "naive_datetime"
    inverted = as_carol.post(
        "/api/v1/blackouts/",
        {"pool": pool.pk, "start": "2030-01-01T04:00:00Z", "end": "2030-01-01T02:00:00Z"},
        format="json",
    )
    assert inverted.json()["code"] == "end_before_start"


def test_deleting_a_catalog_entry_in_use_is_a_409_not_a_500(as_carol, pool, instance_type):
    response = as_carol.delete(f"/api/v1/instance-types/{instance_type.pk}/")
    assert response.status_code == 409
    assert response.json()["code"] == "in_use"
    assert as_carol.delete(f"/api/v1/pools/{pool.pk}/").status_code == 204


@pytest.mark.parametrize(
    "regions",
    [["Atl-1"], ["atl1", "atl1"], "atl1", [1], [f"ab{n}{n}" for n in range(9)], ["atl1"] * 9],
)
def test_pool_fallback_regions_are_validated(as_carol, pool, regions):
    response = as_carol.patch(
        f"/api/v1/pools/{pool.pk}/", {"fallback_regions": regions}, format="json"
    )
    assert response.status_code == 400, response.content
    assert "fallback_regions" in response.json()["extra"]["fields"]
    pool.refresh_from_db()
    assert pool.fallback_regions == []


def test_pool_fallback_regions_are_tried_after_the_pool_region(as_carol, pool):
    response = as_carol.patch(
        f"/api/v1/pools/{pool.pk}/", {"fallback_regions": ["atl1", "nyc2"]}, format="json"
    )
    assert response.status_code == 200, response.content
    pool.refresh_from_db()
    assert pool.regions == [pool.region, "atl1", "nyc2"]

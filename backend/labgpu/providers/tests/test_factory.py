from __future__ import annotations

import pytest

from emulator import contract
from labgpu.providers import ProviderPermanentError, build_driver, driver_from_settings
from labgpu.providers.ratelimit import LocalRequestBudget, RedisRequestBudget


def test_driver_from_settings_reads_the_token_from_the_named_environment_variable(
    monkeypatch, shared_redis
):
    monkeypatch.setenv("LABGPU_PROVIDER_TOKEN_TEST_DO", "dop_v1_from_env")
    monkeypatch.setenv("LABGPU_PROVIDER_REDIS_URL", shared_redis.url)

    driver = driver_from_settings(
        kind="emulator",
        base_url="http://127.0.0.1:8010",
        credential_env="LABGPU_PROVIDER_TOKEN_TEST_DO",
    )
    try:
        assert isinstance(driver.budget, RedisRequestBudget)
        assert "dop_v1_from_env" not in repr(driver)
    finally:
        driver.close()


def test_a_missing_credential_is_a_permanent_error(monkeypatch):
    monkeypatch.delenv("LABGPU_PROVIDER_TOKEN_TEST_DO", raising=False)

    with pytest.raises(ProviderPermanentError, match="LABGPU_PROVIDER_TOKEN_TEST_DO"):
        driver_from_settings(
            kind="digitalocean",
            base_url="https://api.digitalocean.com",
            credential_env="LABGPU_PROVIDER_TOKEN_TEST_DO",
        )


def test_without_redis_the_budget_is_per_process():
    driver = build_driver(kind="digitalocean", base_url="https://api.digitalocean.com", token="t")
    try:
        assert isinstance(driver.budget, LocalRequestBudget)
    finally:
        driver.close()


def test_unknown_provider_kinds_are_refused():
    with pytest.raises(ValueError, match="unknown provider kind"):
        build_driver(kind="aws", base_url="https://example.com", token="t")


def test_the_contract_is_read_in_place_from_the_shared_dir_or_its_override(monkeypatch, tmp_path):
    monkeypatch.delenv("LABGPU_SHARED_DIR", raising=False)
    default = contract.spec_path()
    assert default.parts[-3:] == ("shared", "contracts", contract.SPEC_NAME)

    monkeypatch.setenv("LABGPU_SHARED_DIR", str(tmp_path))
    assert contract.spec_path() == tmp_path / "contracts" / contract.SPEC_NAME

"""The request budget shared through Redis (a throwaway server of the run's, `shared_redis`)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from labgpu.providers import ProviderRateLimited
from labgpu.providers.ratelimit import (
    BudgetExhausted,
    LocalRequestBudget,
    RedisRequestBudget,
    token_fingerprint,
)

TOKEN = "dop_v1_budget-test-token-0123456789"


@pytest.mark.slow
def test_two_drivers_on_one_token_share_one_budget(
    make_driver, emulator, redis_client, budget_prefix
):
    windows = ((4, 1.0),)
    first = make_driver(
        token=TOKEN, budget=redis_client, budget_windows=windows, budget_key_prefix=budget_prefix
    )
    second = make_driver(
        token=TOKEN, budget=redis_client, budget_windows=windows, budget_key_prefix=budget_prefix
    )

    started = time.monotonic()
    for _ in range(4):
        first.sizes()
        second.sizes()
    elapsed = time.monotonic() - started

    # 8 requests at 4 per second between them: the fifth had to wait for the window to slide
    assert elapsed >= 0.9
    assert emulator.state()["counters"]["rate_limited"] == 0


def test_budget_is_keyed_by_a_hash_of_the_token_never_the_token(redis_client, budget_prefix):
    budget = RedisRequestBudget(redis_client, TOKEN, key_prefix=budget_prefix)
    budget.acquire()
    budget.observe(
        {"ratelimit-limit": "250", "ratelimit-remaining": "249", "ratelimit-reset": "2000000000"}
    )

    keys = [k.decode() for k in redis_client.scan_iter(f"{budget_prefix}:*")]
    assert keys
    assert all(token_fingerprint(TOKEN) in k for k in keys)
    assert not any(TOKEN in k for k in keys)
    for key in keys:
        dump = redis_client.dump(key) or b""
        assert TOKEN.encode() not in dump


def test_parallel_workers_never_exceed_the_window(redis_client, budget_prefix):
    budgets = [
        RedisRequestBudget(
            redis_client, TOKEN, windows=((10, 5.0),), key_prefix=budget_prefix, max_wait_s=0.2
        )
        for _ in range(8)
    ]
    granted = []
    lock = threading.Lock()

    def worker(budget: RedisRequestBudget) -> None:
        for _ in range(5):
            try:
                budget.acquire()
            except BudgetExhausted:
                continue
            with lock:
                granted.append(time.time())

    threads = [threading.Thread(target=worker, args=(b,)) for b in budgets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert len(granted) == 10  # 40 attempts, exactly the window's 10 let through
    assert budgets[0].used() == [10]


def test_exhausted_budget_beyond_the_wait_bound_raises_transient_with_retry_after(
    redis_client, budget_prefix
):
    budget = RedisRequestBudget(
        redis_client, TOKEN, windows=((2, 30.0),), key_prefix=budget_prefix, max_wait_s=0.1
    )
    budget.acquire()
    budget.acquire()

    with pytest.raises(BudgetExhausted) as excinfo:
        budget.acquire()

    assert 25 < (excinfo.value.retry_after or 0) <= 30.1


def test_providers_remaining_zero_makes_every_worker_wait_for_the_reset(
    redis_client, budget_prefix
):
    budget = RedisRequestBudget(redis_client, TOKEN, key_prefix=budget_prefix, max_wait_s=0.1)
    other_worker = RedisRequestBudget(redis_client, TOKEN, key_prefix=budget_prefix, max_wait_s=0.1)
    reset = int(time.time()) + 20
    budget.observe(
        {"ratelimit-limit": "5000", "ratelimit-remaining": "0", "ratelimit-reset": str(reset)}
    )

    with pytest.raises(BudgetExhausted) as excinfo:
        other_worker.acquire()

    assert excinfo.value.retry_after is not None and excinfo.value.retry_after > 15
    snapshot = other_worker.snapshot()
    assert (snapshot.limit, snapshot.remaining, snapshot.reset_at) == (5000, 0, float(reset))


@pytest.mark.slow
@pytest.mark.parametrize("shared", [True, False], ids=["redis", "local"])
def test_a_burst_429s_remaining_zero_holds_the_budget_for_retry_after_not_the_hour(
    emulator, redis_client, budget_prefix, shared
):
    """DigitalOcean's burst 429 says `ratelimit-remaining: 0` with `retry-after` while
    `ratelimit-reset` is the hour's oldest request: the zero must not hold every worker an hour."""
    emulator.configure(rate_limit=1, rate_window_s=2.0)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(f"{emulator.url}/v2/sizes", headers=headers).status_code == 200
    refused = httpx.get(f"{emulator.url}/v2/sizes", headers=headers)
    assert refused.status_code == 429 and refused.headers["ratelimit-remaining"] == "0"
    assert int(refused.headers["ratelimit-reset"]) > time.time() + 3000  # the hourly window's
    budget = (
        RedisRequestBudget(redis_client, TOKEN, key_prefix=budget_prefix, max_wait_s=0.1)
        if shared
        else LocalRequestBudget(max_wait_s=0.1)
    )

    budget.observe(refused.headers)

    with pytest.raises(BudgetExhausted) as excinfo:
        budget.acquire()
    assert 0 < (excinfo.value.retry_after or 0) <= int(refused.headers["retry-after"]) + 1


def test_the_providers_remaining_quota_is_counted_down_by_every_worker(redis_client, budget_prefix):
    """Another client spent most of the hour: 2 left means 2 requests fleet-wide, not one each."""
    first = RedisRequestBudget(redis_client, TOKEN, key_prefix=budget_prefix, max_wait_s=0.1)
    second = RedisRequestBudget(redis_client, TOKEN, key_prefix=budget_prefix, max_wait_s=0.1)
    reset = int(time.time()) + 20
    first.observe(
        {"ratelimit-limit": "5000", "ratelimit-remaining": "2", "ratelimit-reset": str(reset)}
    )

    first.acquire()
    second.acquire()
    with pytest.raises(BudgetExhausted) as excinfo:
        first.acquire()

    assert isinstance(excinfo.value, ProviderRateLimited)
    assert 15 < (excinfo.value.retry_after or 0) <= 20.1
    assert second.snapshot().remaining == 0


def test_a_past_reset_no_longer_holds_the_budget(redis_client, budget_prefix):
    budget = RedisRequestBudget(redis_client, TOKEN, key_prefix=budget_prefix, max_wait_s=0.1)
    budget.observe({"ratelimit-remaining": "0", "ratelimit-reset": str(int(time.time()) - 1)})

    budget.acquire()  # the oldest request of the hour has expired since: a slot is free


def test_local_budget_counts_down_the_providers_remaining_quota():
    budget = LocalRequestBudget(max_wait_s=0.1)
    budget.observe({"ratelimit-remaining": "1", "ratelimit-reset": str(int(time.time()) + 30)})

    budget.acquire()
    with pytest.raises(BudgetExhausted) as excinfo:
        budget.acquire()

    assert 25 < (excinfo.value.retry_after or 0) <= 30.1


def test_budget_fails_open_when_redis_is_down(caplog):
    budget = RedisRequestBudget("redis://127.0.0.1:1/15", TOKEN, max_wait_s=0.1)

    budget.acquire()  # no exception: the provider's own 429s remain the backstop
    budget.observe({"ratelimit-remaining": "5", "ratelimit-reset": "2000000000"})

    assert "budget unavailable" in caplog.text


def test_local_budget_waits_for_its_sliding_window():
    waits: list[float] = []
    budget = LocalRequestBudget(
        windows=((2, 0.3),), sleep=lambda s: (waits.append(s), time.sleep(s))
    )

    for _ in range(3):
        budget.acquire()

    assert len(waits) == 1 and 0 < waits[0] <= 0.31

"""The DigitalOcean driver against the live emulator (a real HTTP server in a subprocess)."""

from __future__ import annotations

import ipaddress
import logging
import time
from decimal import Decimal

import httpx
import pytest

from emulator.contract import ExchangeRecorder
from labgpu.providers import (
    DropletSpec,
    ProviderAmbiguousCreate,
    ProviderDriver,
    ProviderNoCapacity,
    ProviderNotFound,
    ProviderPendingEvent,
    ProviderPermanentError,
    ProviderRateLimited,
    ProviderTransientError,
    create_or_adopt,
    node_tag,
    retry_countdown,
)
from labgpu.providers.cloudinit import render_user_data

pytestmark = pytest.mark.slow  # a live emulator subprocess (see pyproject markers)

MI300X = "gpu-mi300x1-192gb"


def spec(node_id: int, **overrides: object) -> DropletSpec:
    fields: dict[str, object] = {
        "node_id": node_id,
        "region": "tor1",
        "size": MI300X,
        "image": "gpu-amd-base",
    }
    fields.update(overrides)
    return DropletSpec(**fields)  # type: ignore[arg-type]


class SleepRecorder:
    """Records the driver's waits and really sleeps (short ones) so the emulator's clock moves."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        time.sleep(seconds)


def route_count(emulator, route: str) -> int:
    return emulator.state()["counters"]["by_route"].get(route, 0)


def test_the_driver_implements_the_provider_interface(make_driver):
    assert isinstance(make_driver(), ProviderDriver)


def test_create_sends_deterministic_name_node_tag_user_data_and_ssh_keys(
    make_driver, emulator, account_key
):
    driver = make_driver()
    user_data = render_user_data(api_url="http://127.0.0.1:8000", bootstrap_token="boot-token-1")
    droplet = driver.create(
        spec(
            42,
            user_data=user_data,
            ssh_keys=(account_key["id"], account_key["fingerprint"]),
            tags=("lab:physics",),
        )
    )

    assert droplet.name == "labgpu-node-42"
    assert droplet.tags == ("labgpu-node-42", "lab:physics")
    assert droplet.node_id == 42
    assert droplet.status == "new"
    assert droplet.gpu_count == 1 and droplet.gpu_model == "amd_mi300x"
    [seen] = emulator.droplets()
    assert seen["name"] == node_tag(42)
    assert seen["ssh_keys"] == [account_key["id"], account_key["fingerprint"]]
    assert seen["user_data_bytes"] == len(user_data.encode())


def test_droplet_turns_active_with_a_public_ipv4_from_networks_v4(make_driver, emulator):
    driver = make_driver()
    created = driver.create(spec(1))

    deadline = time.monotonic() + 5
    droplet = driver.get(created.id)
    while droplet.status != "active" and time.monotonic() < deadline:
        time.sleep(0.05)
        droplet = driver.get(created.id)

    assert droplet.status == "active"
    assert droplet.public_ipv4 is not None
    assert ipaddress.ip_address(droplet.public_ipv4) in ipaddress.ip_network("192.0.2.0/24")
    assert droplet.private_ipv4 is not None and droplet.private_ipv4.startswith("10.")


def test_destroy_removes_the_droplet_and_get_then_raises_not_found(make_driver, emulator):
    driver = make_driver()
    droplet = driver.create(spec(2))
    emulator.activate(droplet.id)

    driver.destroy(droplet.id)

    with pytest.raises(ProviderNotFound) as excinfo:
        driver.get(droplet.id)
    assert excinfo.value.status == 404
    assert excinfo.value.id == "not_found"
    assert emulator.droplets() == []


def test_destroying_a_droplet_that_is_already_gone_succeeds(make_driver, emulator):
    driver = make_driver()
    droplet = driver.create(spec(3))
    emulator.vanish(droplet.id)

    driver.destroy(droplet.id)  # 404 = already gone = success
    driver.destroy(123456789)


def exhaust_rate_limit(emulator, token: str = "test-token") -> None:
    """Another client on the same token uses up the window (the driver never saw the headers)."""
    with httpx.Client(base_url=emulator.url, headers={"Authorization": f"Bearer {token}"}) as c:
        while c.get("/v2/sizes").status_code != 429:
            pass


def test_429_storm_is_waited_out_honouring_retry_after(make_driver, emulator):
    emulator.configure(rate_limit=3, rate_window_s=1.0)
    sleeper = SleepRecorder()
    driver = make_driver(sleep=sleeper, max_attempts=4)
    exhaust_rate_limit(emulator)
    rejected_before = emulator.state()["counters"]["rate_limited"]

    started = time.monotonic()
    sizes = driver.sizes()

    assert sizes
    assert emulator.state()["counters"]["rate_limited"] == rejected_before + 1
    # the emulator says retry-after: 1 (whole seconds, like DigitalOcean); the driver waited that
    assert sleeper.waits and sleeper.waits[0] >= 1.0
    assert time.monotonic() - started >= 1.0


def test_driver_throttles_itself_when_the_headers_say_the_window_is_spent(make_driver, emulator):
    # the headers describe the hourly quota: here 3 requests a second
    emulator.configure(rate_limit_hourly=3, rate_window_hourly_s=1.0)
    sleeper = SleepRecorder()
    driver = make_driver(sleep=sleeper)

    for _ in range(5):
        driver.sizes()

    # ratelimit-remaining: 0 made the budget wait for ratelimit-reset instead of collecting 429s
    assert emulator.state()["counters"]["rate_limited"] == 0
    assert sleeper.waits


def test_rate_limited_create_is_retried_and_makes_exactly_one_droplet(make_driver, emulator):
    emulator.configure(rate_limit=2, rate_window_s=1.0)
    driver = make_driver(sleep=SleepRecorder())
    exhaust_rate_limit(emulator)

    droplet = driver.create(spec(5))

    assert route_count(emulator, "droplets_create") == 2  # one 429, one 202
    assert [d["id"] for d in emulator.droplets()] == [droplet.id]


def test_a_spent_hourly_quota_429_without_retry_after_is_waited_out_until_the_reset(
    make_driver, emulator
):
    emulator.configure(rate_limit_hourly=2, rate_window_hourly_s=1.5)
    sleeper = SleepRecorder()
    driver = make_driver(sleep=sleeper)
    exhaust_rate_limit(emulator)

    assert driver.sizes()

    assert emulator.state()["counters"]["rate_limited"] == 2  # ours + exactly one of the driver
    assert sleeper.waits and 0 < sleeper.waits[0] <= 2.6  # ratelimit-reset, whole seconds


def test_a_spent_hourly_quota_goes_up_as_rate_limited_with_seconds_until_the_reset(
    make_driver, emulator
):
    emulator.configure(rate_limit_hourly=1, rate_window_hourly_s=40.0)
    sleeper = SleepRecorder()
    driver = make_driver(sleep=sleeper, max_retry_wait_s=5)
    exhaust_rate_limit(emulator)

    with pytest.raises(ProviderRateLimited) as excinfo:
        driver.sizes()

    error = excinfo.value
    assert isinstance(error, ProviderTransientError) and error.status == 429
    assert error.remaining == 0 and error.reset_at is not None
    assert 30 < error.retry_after <= 41.5  # ratelimit-reset is whole seconds
    assert abs(error.retry_after - (error.reset_at - time.time())) < 2
    assert retry_countdown(error, default=5) == pytest.approx(error.retry_after, abs=1.5)
    assert sleeper.waits == []


def test_retry_after_beyond_the_bound_goes_up_as_transient_with_the_hint(make_driver, emulator):
    emulator.configure(rate_limit=1, rate_window_s=30.0)
    sleeper = SleepRecorder()
    driver = make_driver(sleep=sleeper, max_retry_wait_s=5)
    exhaust_rate_limit(emulator)

    with pytest.raises(ProviderRateLimited) as excinfo:
        driver.sizes()

    assert excinfo.value.status == 429
    assert excinfo.value.retry_after is not None and excinfo.value.retry_after > 5
    assert sleeper.waits == []  # did not sit out 30 s in a worker


def test_5xx_on_get_is_retried_with_backoff(make_driver, emulator):
    driver = make_driver(sleep=SleepRecorder())
    droplet = driver.create(spec(6))
    emulator.fail_next("GET", "/v2/droplets/*", 500, times=2)

    assert driver.get(droplet.id).id == droplet.id
    assert route_count(emulator, "droplets_get") == 3


def test_persistent_5xx_on_get_gives_up_after_max_attempts(make_driver, emulator):
    driver = make_driver(max_attempts=3, sleep=SleepRecorder())
    emulator.set_faults(error_rate_5xx=1.0)

    with pytest.raises(ProviderTransientError) as excinfo:
        driver.sizes()

    assert not isinstance(excinfo.value, ProviderAmbiguousCreate)
    assert excinfo.value.status == 500
    assert route_count(emulator, "sizes_list") == 3


def test_5xx_after_the_droplet_was_made_raises_ambiguous_create_and_is_never_resent(
    make_driver, emulator
):
    driver = make_driver()
    emulator.fail_next("POST", "/v2/droplets", 500, after_create=True)

    with pytest.raises(ProviderAmbiguousCreate) as excinfo:
        driver.create(spec(7))

    assert excinfo.value.tag == "labgpu-node-7"
    assert excinfo.value.status == 500
    assert route_count(emulator, "droplets_create") == 1
    assert len(emulator.droplets()) == 1


def test_retried_create_adopts_the_droplet_it_already_made(make_driver, emulator):
    driver = make_driver()
    emulator.fail_next("POST", "/v2/droplets", 500, after_create=True)
    with pytest.raises(ProviderAmbiguousCreate):
        driver.create(spec(8))

    droplet, adopted = create_or_adopt(driver, spec(8))

    assert adopted is True
    assert droplet.name == "labgpu-node-8"
    assert len(emulator.droplets()) == 1  # invariant I-4: no duplicate
    assert route_count(emulator, "droplets_create") == 1


def test_create_timeout_is_ambiguous_and_the_droplet_can_be_found_by_tag(make_driver, emulator):
    driver = make_driver(timeout_s=0.3)
    emulator.set_faults(next=[{"method": "POST", "path": "/v2/droplets", "delay_s": 1.0}])

    with pytest.raises(ProviderAmbiguousCreate):
        driver.create(spec(9))

    assert [d.name for d in driver.find_by_tag("labgpu-node-9")] == ["labgpu-node-9"]
    assert route_count(emulator, "droplets_create") == 1


def test_create_is_resent_when_the_connection_was_never_made(make_driver, emulator):
    class RefuseFirstConnect(httpx.HTTPTransport):
        refused = 0

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            if not self.refused:
                self.refused += 1
                raise httpx.ConnectError("connection refused", request=request)
            return super().handle_request(request)

    driver = make_driver(transport=RefuseFirstConnect())

    droplet = driver.create(spec(10))

    assert droplet.name == "labgpu-node-10"
    assert len(emulator.droplets()) == 1


def test_no_capacity_422_is_permanent_with_the_providers_message(make_driver, emulator):
    emulator.set_faults(no_capacity_sizes=[MI300X])
    driver = make_driver()

    with pytest.raises(ProviderNoCapacity) as excinfo:
        driver.create(spec(11))

    assert isinstance(excinfo.value, ProviderPermanentError)
    assert (excinfo.value.region, excinfo.value.size) == ("tor1", MI300X)
    assert excinfo.value.status == 422
    assert excinfo.value.id == "unprocessable_entity"
    assert "no capacity" in excinfo.value.message
    assert route_count(emulator, "droplets_create") == 1  # not retried
    assert emulator.droplets() == []


def test_a_region_out_of_stock_is_no_capacity_with_the_regions_that_still_have_it(
    make_driver, emulator
):
    emulator.set_stock(MI300X, "tor1", 0)
    driver = make_driver()

    with pytest.raises(ProviderNoCapacity) as excinfo:
        driver.create(spec(15))
    emulator.set_stock(MI300X, "tor1", 1)  # back in stock
    droplet = driver.create(spec(15))

    error = excinfo.value
    assert (error.region, error.size, error.status) == ("tor1", MI300X, 422)
    assert error.message == "Size is not available in this region."
    assert error.available_regions == ("atl1", "nyc2")
    assert [d["id"] for d in emulator.droplets()] == [droplet.id]
    assert route_count(emulator, "droplets_create") == 2  # the refused one was not retried
    sizes = {s.slug: s for s in driver.sizes()}
    assert "tor1" not in sizes[MI300X].regions  # the one machine is taken


def test_size_not_enabled_for_the_account_is_permanent(make_driver, emulator):
    emulator.set_faults(not_enabled_sizes=["gpu-mi350x1-288gb"])

    with pytest.raises(ProviderPermanentError, match="not enabled") as excinfo:
        make_driver().create(spec(12, size="gpu-mi350x1-288gb", region="atl1"))
    assert not isinstance(excinfo.value, ProviderNoCapacity)  # another region would not help


def test_bad_token_is_permanent_unauthorized(make_driver, emulator):
    emulator.configure(tokens=["the-right-token"])

    with pytest.raises(ProviderPermanentError) as excinfo:
        make_driver(token="the-wrong-token").sizes()

    assert excinfo.value.status == 401
    assert excinfo.value.id == "unauthorized"


def test_destroy_during_the_create_event_is_retried_until_the_droplet_has_booted(
    make_driver, emulator
):
    emulator.configure(boot_delay_s=0.5)
    driver = make_driver(
        sleep=SleepRecorder(), backoff_base_s=0.1, backoff_max_s=0.3, max_attempts=8
    )
    droplet = driver.create(spec(13))

    driver.destroy(droplet.id)

    assert emulator.droplets() == []
    assert emulator.state()["counters"]["by_status"].get("422", 0) >= 1  # DigitalOcean's refusal


def test_destroy_while_a_long_create_event_runs_goes_up_as_a_pending_event(make_driver, emulator):
    emulator.configure(boot_delay_s=60)
    driver = make_driver(sleep=SleepRecorder(), max_attempts=2)
    droplet = driver.create(spec(16))

    with pytest.raises(ProviderPendingEvent) as excinfo:
        driver.destroy(droplet.id)

    assert isinstance(excinfo.value, ProviderTransientError)  # a teardown task retries it
    assert excinfo.value.status == 422 and "pending event" in excinfo.value.message
    assert excinfo.value.retry_after is not None
    assert [d["id"] for d in emulator.droplets()] == [droplet.id]
    emulator.activate(droplet.id)
    driver.destroy(droplet.id)
    assert emulator.droplets() == []


def test_destroy_retries_5xx_until_it_succeeds(make_driver, emulator):
    driver = make_driver(sleep=SleepRecorder())
    droplet = driver.create(spec(14))
    emulator.activate(droplet.id)
    emulator.fail_next("DELETE", "/v2/droplets/*", 503, times=3)

    driver.destroy(droplet.id)

    assert emulator.droplets() == []


def test_list_ours_follows_pagination_over_more_than_200_gpu_droplets(make_driver, emulator):
    emulator.seed(230, tags=["labgpu-node-1000"], name_prefix="ours-")
    emulator.seed(5, tags=["someone-else"], name_prefix="theirs-")
    emulator.seed(3, size="s-1vcpu-1gb", tags=["labgpu-node-1"], name_prefix="cpu-")
    recorder = ExchangeRecorder()
    driver = make_driver(event_hooks=recorder.hooks)

    ours = driver.list_ours()

    assert len(ours) == 230
    assert all(d.gpu_count for d in ours)
    lists = [e for e in recorder.exchanges if e.path == "/v2/droplets"]
    assert len(lists) == 2  # 200 + 30, following links.pages.next
    assert all("type=gpus" in e.url and "tag_name" not in e.url for e in lists)


def test_pagination_with_small_pages_returns_every_droplet_once(make_driver, emulator):
    emulator.configure(max_per_page=7)
    ids = emulator.seed(40, tags=["labgpu-node-5"])

    droplets = make_driver().list_ours()

    assert sorted(d.id for d in droplets) == sorted(ids)


def test_find_by_tag_filters_gpu_droplets_client_side(make_driver, emulator):
    driver = make_driver()
    for node_id in (20, 21, 22):
        driver.create(spec(node_id))
    emulator.seed(2, tags=["labgpu-node-21"], size="s-1vcpu-1gb")  # non-GPU: not listed

    found = driver.find_by_tag("labgpu-node-21")

    assert [d.name for d in found] == ["labgpu-node-21"]
    assert driver.find_by_tag("labgpu-node-99") == []


def test_sizes_carry_exact_hourly_prices_and_gpu_info(make_driver):
    sizes = {s.slug: s for s in make_driver().sizes()}

    for slug in (
        "gpu-mi300x1-192gb",
        "gpu-mi300x8-1536gb",
        "gpu-mi325x8-2048gb-contracted",
        "gpu-mi350x1-288gb",
        "gpu-mi350x8-2304gb",
        "gpu-h100x1-80gb",
        "gpu-h200x1-141gb",
    ):
        assert sizes[slug].is_gpu
    mi300x = sizes["gpu-mi300x1-192gb"]
    assert mi300x.price_hourly == Decimal("1.99")
    assert (mi300x.gpu_count, mi300x.gpu_model, mi300x.gpu_vram_gib) == (1, "amd_mi300x", 192)
    assert sizes["gpu-mi350x8-2304gb"].gpu_count == 8
    assert not sizes["s-1vcpu-1gb"].is_gpu


def test_rate_limit_headers_are_recorded(make_driver, emulator):
    driver = make_driver()
    driver.sizes()

    snapshot = driver.rate_limit()

    assert snapshot.limit == 5000  # DigitalOcean's headers describe the hourly quota
    assert snapshot.remaining == 4999
    assert snapshot.reset_at is not None and snapshot.reset_at > time.time()


def test_the_token_is_never_logged_nor_shown(make_driver, emulator, caplog):
    token = "dop_v1_supersecret0123456789"
    caplog.set_level(logging.DEBUG)
    emulator.fail_next("GET", "/v2/sizes", 500)
    driver = make_driver(token=token, sleep=SleepRecorder())

    driver.sizes()
    droplet = driver.create(spec(30))
    emulator.activate(droplet.id)
    driver.destroy(droplet.id)

    assert token not in caplog.text
    assert token not in repr(driver)

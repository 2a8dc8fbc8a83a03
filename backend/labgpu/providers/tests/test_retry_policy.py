"""Retry decisions in isolation, on a scripted transport (no server, no real sleeping)."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable

import httpx
import pytest

from labgpu.providers import (
    DropletSpec,
    ProviderAmbiguousCreate,
    ProviderNoCapacity,
    ProviderPermanentError,
    ProviderRateLimited,
    ProviderTransientError,
    retry_countdown,
)
from labgpu.providers.digitalocean import DigitalOceanDriver

SIZES_PAGE = {"sizes": [], "links": {}, "meta": {"total": 0}}


def scripted(*steps: Callable[[httpx.Request], httpx.Response] | httpx.Response | Exception):
    """A transport answering each request with the next step; records the requests."""
    seen: list[httpx.Request] = []
    queue = list(steps)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        step = queue.pop(0)
        if isinstance(step, Exception):
            raise step
        return step(request) if callable(step) else step

    return httpx.MockTransport(handler), seen


def make(transport: httpx.MockTransport, waits: list[float], **options) -> DigitalOceanDriver:
    return DigitalOceanDriver(
        base_url="https://api.digitalocean.com",
        token="t0ken-for-tests",
        transport=transport,
        sleep=waits.append,
        backoff_base_s=0.5,
        **options,
    )


def too_many(**headers: str) -> httpx.Response:
    return httpx.Response(
        429,
        json={"id": "too_many_requests", "message": "API rate limit exceeded."},
        headers=headers,
    )


def test_retry_after_seconds_is_the_wait():
    transport, seen = scripted(
        too_many(**{"retry-after": "7"}), httpx.Response(200, json=SIZES_PAGE)
    )
    waits: list[float] = []

    make(transport, waits).sizes()

    assert waits == [7.0]
    assert len(seen) == 2


def test_retry_after_as_an_http_date_is_understood():
    when = email.utils.formatdate(time.time() + 12, usegmt=True)
    transport, _ = scripted(too_many(**{"retry-after": when}), httpx.Response(200, json=SIZES_PAGE))
    waits: list[float] = []

    make(transport, waits).sizes()

    assert 10 <= waits[0] <= 12


def test_ratelimit_reset_is_used_when_retry_after_is_missing():
    reset = str(int(time.time()) + 9)
    transport, _ = scripted(
        too_many(**{"ratelimit-reset": reset}), httpx.Response(200, json=SIZES_PAGE)
    )
    waits: list[float] = []

    make(transport, waits).sizes()

    assert 7.5 <= waits[0] <= 9


def test_a_spent_hourly_quota_waits_until_the_reset_and_goes_up_beyond_the_bound():
    reset = time.time() + 120
    transport, seen = scripted(
        too_many(**{"ratelimit-remaining": "0", "ratelimit-reset": str(int(reset))})
    )
    waits: list[float] = []

    with pytest.raises(ProviderRateLimited) as excinfo:
        make(transport, waits, max_retry_wait_s=60).sizes()

    assert len(seen) == 1 and waits == []  # two minutes are not slept out in a worker
    assert 118 <= excinfo.value.retry_after <= 120
    assert excinfo.value.reset_at == int(reset) and excinfo.value.remaining == 0
    assert 118 <= retry_countdown(excinfo.value, default=5) <= 121


def test_a_burst_429_with_quota_left_waits_at_most_the_minute_not_the_hourly_reset():
    reset = str(int(time.time()) + 3000)  # the hour's oldest request expires late
    transport, _ = scripted(
        too_many(**{"ratelimit-remaining": "4000", "ratelimit-reset": reset}),
        httpx.Response(200, json=SIZES_PAGE),
    )
    waits: list[float] = []

    make(transport, waits, max_retry_wait_s=90).sizes()

    assert waits == [60.0]


def test_size_not_available_in_this_region_is_no_capacity_with_the_providers_regions():
    transport, seen = scripted(
        httpx.Response(
            422,
            json={
                "id": "unprocessable_entity",
                "message": "Size is not available in this region.",
                "error_attributes": {"available_regions": ["atl1", "nyc2"]},
            },
        )
    )
    spec = DropletSpec(node_id=5, region="tor1", size="gpu-mi300x1-192gb", image="gpu-amd-base")

    with pytest.raises(ProviderNoCapacity) as excinfo:
        make(transport, []).create(spec)

    assert (excinfo.value.region, excinfo.value.size) == ("tor1", "gpu-mi300x1-192gb")
    assert excinfo.value.available_regions == ("atl1", "nyc2")
    assert len(seen) == 1


def test_retry_countdown_uses_the_providers_hint_else_the_default():
    assert retry_countdown(ProviderRateLimited("429", retry_after=12.2), default=5) == 12.2
    assert retry_countdown(ProviderRateLimited("429", retry_after=0.2), default=5) == 1
    assert retry_countdown(ProviderRateLimited("429", retry_after=900), 5, maximum=300) == 300
    assert retry_countdown(ProviderTransientError("timeout"), default=7.5) == 7.5
    # the floor is the caller's (LABGPU_RETRY_MIN_S, scaled with every other timing in tests)
    assert retry_countdown(ProviderTransientError("timeout"), default=0.2, minimum=0.1) == 0.2
    assert retry_countdown(ProviderTransientError("timeout"), default=0.02, minimum=0.1) == 0.1
    assert retry_countdown(ProviderPermanentError("422"), default=5) == 5
    assert retry_countdown(RuntimeError("not ours"), default=3) == 3


def test_read_timeout_on_get_is_retried_with_growing_jittered_backoff():
    transport, seen = scripted(
        httpx.ReadTimeout("slow"), httpx.ReadTimeout("slow"), httpx.Response(200, json=SIZES_PAGE)
    )
    waits: list[float] = []

    make(transport, waits).sizes()

    assert len(seen) == 3
    assert 0.25 <= waits[0] <= 0.5 and 0.5 <= waits[1] <= 1.0


def test_read_timeout_on_create_is_ambiguous_and_not_resent():
    transport, seen = scripted(httpx.ReadTimeout("slow"))
    waits: list[float] = []
    spec = DropletSpec(node_id=77, region="tor1", size="gpu-mi300x1-192gb", image="gpu-amd-base")

    with pytest.raises(ProviderAmbiguousCreate) as excinfo:
        make(transport, waits).create(spec)

    assert excinfo.value.tag == "labgpu-node-77"
    assert len(seen) == 1 and waits == []


def test_pagination_never_sends_the_token_to_another_origin():
    page1 = {
        "droplets": [],
        "links": {
            "pages": {"next": "https://evil.example.com/v2/droplets?page=2&per_page=200&type=gpus"}
        },
        "meta": {"total": 0},
    }
    page2 = {"droplets": [], "links": {}, "meta": {"total": 0}}
    transport, seen = scripted(httpx.Response(200, json=page1), httpx.Response(200, json=page2))

    assert make(transport, []).list_ours() == []

    assert [r.url.host for r in seen] == ["api.digitalocean.com", "api.digitalocean.com"]
    assert seen[1].url.params["page"] == "2"


def test_user_data_over_64_kib_is_refused_before_sending():
    transport, seen = scripted()
    spec = DropletSpec(
        node_id=1,
        region="tor1",
        size="gpu-mi300x1-192gb",
        image="gpu-amd-base",
        user_data="#" * (64 * 1024 + 1),
    )

    with pytest.raises(ProviderPermanentError, match="64 KiB"):
        make(transport, []).create(spec)
    assert seen == []


def test_plain_http_is_refused_for_anything_but_loopback():
    with pytest.raises(ValueError, match="non-loopback"):
        DigitalOceanDriver(base_url="http://api.example.com", token="t")
    DigitalOceanDriver(base_url="http://127.0.0.1:8010", token="t").close()

"""DigitalOcean API v2 driver over plain httpx (also drives the local emulator).

Why not `pydo`: its default retry policy resends `POST /v2/droplets` on 5xx, which can create a
second, billed droplet. Here every retry decision is explicit:

| failure                                   | GET / DELETE       | POST /v2/droplets             |
|-------------------------------------------|--------------------|-------------------------------|
| 429                                       | wait, retry        | wait, retry (nothing made)    |
| connect error, connect or pool timeout    | backoff, retry     | backoff, retry (never sent)   |
| 5xx, read/write timeout, dropped response | backoff, retry     | ProviderAmbiguousCreate       |
| 422 "pending event" (DELETE)              | backoff, retry     | -                             |
| 422 size not available / no capacity     | -                  | ProviderNoCapacity            |
| 401, 403, 422, other 4xx                  | ProviderPermanentError                             |
| 404                                       | ProviderNotFound (destroy: success)                |

A 429 waits `retry-after` (DigitalOcean sends it for its per-minute burst limit), else, when the
hourly quota is spent (`ratelimit-remaining: 0`), until `ratelimit-reset`; a 429 with quota left
and no `retry-after` is the burst limit, which clears within the minute. No hint: exponential
backoff with jitter. `ProviderAmbiguousCreate` tells the caller to look the droplet up by its tag
and adopt it (I-4). Retries are bounded (`max_attempts`, `max_retry_wait_s`); beyond that the
last error goes up (`ProviderRateLimited`, `ProviderPendingEvent`, `ProviderTransientError`, each
with `retry_after`) to the Celery task, which waits `errors.retry_countdown(error, backoff)`.
"""

from __future__ import annotations

import contextlib
import email.utils
import logging
import random
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import httpx

from labgpu import egress

from .base import (
    NODE_TAG_PREFIX,
    VOLUME_TAG,
    Droplet,
    DropletSpec,
    RateLimitSnapshot,
    Size,
    Volume,
    VolumeAction,
    VolumeSpec,
    node_id_from_tags,
)
from .credentials import egress_transport
from .errors import (
    ProviderAmbiguousCreate,
    ProviderError,
    ProviderNoCapacity,
    ProviderNotFound,
    ProviderPendingEvent,
    ProviderPermanentError,
    ProviderRateLimited,
    ProviderTransientError,
)
from .ratelimit import LocalRequestBudget, RedisRequestBudget, RequestBudget, token_fingerprint

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.digitalocean.com"
USER_DATA_LIMIT = 64 * 1024  # bytes; DigitalOcean rejects larger user_data
MAX_PER_PAGE = 200
MAX_PAGES = 500  # 100,000 droplets: a guard against a provider that never stops paginating

_LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1"}

# Failures where the request provably never reached the server: safe to resend even a create.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)

#: A create refused for capacity: DigitalOcean's "Size is not available in this region.",
#: "Region is not available", "…temporarily unavailable because of … capacity".
_NO_CAPACITY_MARKERS = ("not available in this region", "region is not available", "capacity")
#: DigitalOcean's burst limit is per minute: a 429 without `retry-after` clears within this.
_BURST_WINDOW_S = 60.0


class DigitalOceanDriver:
    """`ProviderDriver` for DigitalOcean API v2 and the emulator.

    `budget` may be a `RequestBudget`, a `redis.Redis` client, or a Redis URL; with None the budget
    lives in this process only (fine for one worker, wrong for a fleet).
    """

    def __init__(
        self,
        *,
        base_url: str = DEFAULT_BASE_URL,
        token: str,
        budget: RequestBudget | object | str | None = None,
        budget_windows: tuple[tuple[int, float], ...] | None = None,
        budget_key_prefix: str | None = None,
        timeout_s: float = 30.0,
        connect_timeout_s: float = 5.0,
        max_attempts: int = 5,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 20.0,
        max_retry_wait_s: float = 60.0,
        per_page: int = MAX_PER_PAGE,
        tag_prefix: str = NODE_TAG_PREFIX,
        transport: httpx.BaseTransport | None = None,
        event_hooks: Mapping[str, list[Callable[..., Any]]] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        user_agent: str = "labgpu-provider/0.1",
        allow_plain_http: bool = False,
    ) -> None:
        if not token:
            raise ValueError("a provider token is required")
        parts = urlsplit(base_url)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        # A bearer token over cleartext to a non-local host would leak it; only an origin the
        # operator listed (compose's emulator on its private network) may be plain http.
        plain_http_ok = allow_plain_http or parts.hostname in _LOOPBACK_HOSTS
        if parts.scheme == "http" and not plain_http_ok:
            raise ValueError("refusing to send the provider token over http to a non-loopback host")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.base_url = base_url.rstrip("/")
        self._origin = (parts.scheme, parts.netloc)
        self.token_fingerprint = token_fingerprint(token)
        self.max_attempts = max_attempts
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.max_retry_wait_s = max_retry_wait_s
        self.per_page = max(1, min(per_page, MAX_PER_PAGE))
        self.tag_prefix = tag_prefix
        self._sleep = sleep
        self.budget: RequestBudget = self._make_budget(
            budget, token, budget_windows, budget_key_prefix, max_retry_wait_s
        )
        self._client = httpx.Client(
            base_url=self.base_url,
            headers={
                "Authorization": f"Bearer {token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
                "User-Agent": user_agent,
            },
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            transport=transport or egress_transport(),
            event_hooks=dict(event_hooks or {}),
            # a redirect could carry the bearer token elsewhere; DigitalOcean does not redirect
            follow_redirects=False,
        )

    def _make_budget(
        self,
        budget: object,
        token: str,
        windows: tuple[tuple[int, float], ...] | None,
        key_prefix: str | None,
        max_wait_s: float,
    ) -> RequestBudget:
        kwargs: dict[str, Any] = {"max_wait_s": max_wait_s, "sleep": self._sleep}
        if windows is not None:
            kwargs["windows"] = windows
        if budget is None:
            return LocalRequestBudget(**kwargs)
        if hasattr(budget, "acquire") and hasattr(budget, "observe"):
            return budget  # type: ignore[return-value]
        if key_prefix is not None:
            kwargs["key_prefix"] = key_prefix
        return RedisRequestBudget(budget, token, **kwargs)

    def __repr__(self) -> str:
        return f"<DigitalOceanDriver {self.base_url} token=sha256:{self.token_fingerprint[:8]}…>"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> DigitalOceanDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public operations ------------------------------------------------------------------

    def create(self, spec: DropletSpec) -> Droplet:
        """POST /v2/droplets. See the module docstring for what happens on failure."""
        if len(spec.user_data.encode()) > USER_DATA_LIMIT:
            raise ProviderPermanentError(
                f"user_data is {len(spec.user_data.encode())} bytes, over the 64 KiB limit"
            )
        body: dict[str, Any] = {
            "name": spec.name,
            "region": spec.region,
            "size": spec.size,
            "image": spec.image,
            "tags": list(spec.all_tags),
        }
        if spec.ssh_keys:
            body["ssh_keys"] = list(spec.ssh_keys)
        if spec.user_data:
            body["user_data"] = spec.user_data
        if spec.vpc_uuid:
            body["vpc_uuid"] = spec.vpc_uuid
        if spec.volume_ids:
            body["volumes"] = list(spec.volume_ids)
        try:
            data = self._request("POST", "/v2/droplets", json=body, create_tag=spec.tag)
        except ProviderPermanentError as exc:
            if exc.status == 422 and _is_no_capacity(exc.message):
                available = exc.attributes.get("available_regions")
                raise ProviderNoCapacity(
                    exc.message,
                    region=spec.region,
                    size=spec.size,
                    available_regions=tuple(available) if isinstance(available, list) else (),
                    status=exc.status,
                    id=exc.id,
                    request_id=exc.request_id,
                    attributes=exc.attributes,
                ) from exc
            raise
        droplet = _droplet_from(data["droplet"])
        logger.info("created droplet %s (%s) for %s", droplet.id, droplet.size_slug, spec.tag)
        return droplet

    def get(self, droplet_id: int) -> Droplet:
        """GET /v2/droplets/{id}; raises ProviderNotFound when it is gone."""
        data = self._request("GET", f"/v2/droplets/{int(droplet_id)}")
        return _droplet_from(data["droplet"])

    def destroy(self, droplet_id: int) -> bool:
        """DELETE /v2/droplets/{id}. A droplet that is already gone counts as destroyed. Returns
        whether this call was the one the provider accepted (False: it was gone already)."""
        try:
            self._request("DELETE", f"/v2/droplets/{int(droplet_id)}")
        except ProviderNotFound:
            logger.info("droplet %s already gone", droplet_id)
            return False
        logger.info("destroy requested for droplet %s", droplet_id)
        return True

    def list_gpu_droplets(self) -> Iterator[Droplet]:
        """Every GPU droplet on the account (`type=gpus`, all pages).

        GPU droplets are left out of a plain `GET /v2/droplets`, and `type` cannot be combined with
        `tag_name`, so filtering by tag has to happen here.

        Pages are offsets, not a snapshot: a droplet created or destroyed during the walk can
        shift another across a page boundary. Duplicates are dropped here; a droplet *missing*
        from one listing is not proof that it is gone — confirm with `get()` before marking a
        node lost.
        """
        seen: set[int] = set()
        for item in self._paginate("/v2/droplets", "droplets", {"type": "gpus"}):
            droplet = _droplet_from(item)
            if droplet.id not in seen:
                seen.add(droplet.id)
                yield droplet

    def find_by_tag(self, tag: str) -> list[Droplet]:
        return [d for d in self.list_gpu_droplets() if tag in d.tags]

    def list_ours(self) -> list[Droplet]:
        return [
            d
            for d in self.list_gpu_droplets()
            if any(t.startswith(self.tag_prefix) for t in d.tags)
        ]

    def sizes(self) -> list[Size]:
        return [_size_from(item) for item in self._paginate("/v2/sizes", "sizes", {})]

    def power_down(self, droplet_id: int, *, graceful: bool = True) -> None:
        """POST /v2/droplets/{id}/actions `shutdown` or `power_off` (poll `get` for `off`)."""
        kind = "shutdown" if graceful else "power_off"
        try:
            self._request("POST", f"/v2/droplets/{int(droplet_id)}/actions", json={"type": kind})
        except ProviderPermanentError as exc:
            if exc.status == 422 and "pending event" in exc.message.lower():
                raise ProviderPendingEvent(exc.message, status=422, id=exc.id) from exc
            raise

    # -- volumes --------------------------------------------------------------------------------
    # Action requests leave out the optional `region`: the spec's `region_slug` enum lacks GPU
    # regions such as atl1, and DigitalOcean knows the volume's region from its id anyway.

    def create_volume(self, spec: VolumeSpec) -> Volume:
        """POST /v2/volumes; the name taken in the region (409) adopts the existing volume.

        Safe to retry after any failure: one name per region (DigitalOcean's rule) means a second
        create cannot make a second volume.
        """
        body: dict[str, Any] = {
            "name": spec.name,
            "region": spec.region,
            "size_gigabytes": spec.size_gb,
            "tags": list(dict.fromkeys(spec.tags)),
        }
        if spec.description:
            body["description"] = spec.description
        try:
            data = self._request("POST", "/v2/volumes", json=body)
        except ProviderPermanentError as exc:
            if exc.status != 409:
                raise
            existing = self.find_volume(spec.name, spec.region)
            if existing is None:
                raise
            logger.info("volume %s already exists in %s; adopted", spec.name, spec.region)
            return existing
        volume = _volume_from(data["volume"])
        logger.info("created volume %s (%s, %s GB)", volume.id, volume.name, volume.size_gb)
        return volume

    def get_volume(self, volume_id: str) -> Volume:
        """GET /v2/volumes/{id}; raises ProviderNotFound when it is gone."""
        return _volume_from(self._request("GET", f"/v2/volumes/{volume_id}")["volume"])

    def find_volume(self, name: str, region: str) -> Volume | None:
        items = list(self._paginate("/v2/volumes", "volumes", {"name": name, "region": region}))
        return _volume_from(items[0]) if items else None

    def list_volumes(self, *, tag: str | None = VOLUME_TAG) -> list[Volume]:
        """Every volume on the account (all pages), only those carrying `tag` unless it is None."""
        volumes = [_volume_from(item) for item in self._paginate("/v2/volumes", "volumes", {})]
        unique = {v.id: v for v in volumes}  # offset pages can repeat an item
        return [v for v in unique.values() if tag is None or tag in v.tags]

    def delete_volume(self, volume_id: str) -> None:
        """DELETE /v2/volumes/{id}; gone already counts as deleted."""
        try:
            self._request("DELETE", f"/v2/volumes/{volume_id}")
        except ProviderNotFound:
            logger.info("volume %s already gone", volume_id)

    def attach_volume(self, volume_id: str, droplet_id: int) -> VolumeAction | None:
        """Start attaching; None when it already is attached to this droplet."""
        try:
            return self._volume_action(volume_id, {"type": "attach", "droplet_id": int(droplet_id)})
        except ProviderPermanentError as exc:
            if exc.status == 422 and self.get_volume(volume_id).droplet_id == int(droplet_id):
                return None
            raise

    def detach_volume(self, volume_id: str, droplet_id: int) -> VolumeAction | None:
        """Start detaching; None when it is not attached to this droplet (or that is gone)."""
        try:
            return self._volume_action(volume_id, {"type": "detach", "droplet_id": int(droplet_id)})
        except ProviderNotFound:
            # the volume or the droplet is gone; a volume gone is a caller's problem
            if int(droplet_id) in self.get_volume(volume_id).droplet_ids:
                raise
            return None
        except ProviderPermanentError as exc:
            if exc.status == 422 and int(droplet_id) not in self.get_volume(volume_id).droplet_ids:
                return None
            raise

    def resize_volume(self, volume_id: str, size_gb: int) -> VolumeAction:
        return self._volume_action(volume_id, {"type": "resize", "size_gigabytes": int(size_gb)})

    def volume_action(self, volume_id: str, action_id: int) -> VolumeAction:
        data = self._request("GET", f"/v2/volumes/{volume_id}/actions/{int(action_id)}")
        return _volume_action_from(data["action"], volume_id)

    def list_volume_actions(self, volume_id: str) -> list[VolumeAction]:
        """GET /v2/volumes/{id}/actions (all pages), newest first as the provider lists them."""
        items = self._paginate(f"/v2/volumes/{volume_id}/actions", "actions", {})
        return [_volume_action_from(item, volume_id) for item in items]

    def _volume_action(self, volume_id: str, body: dict[str, Any]) -> VolumeAction:
        data = self._request("POST", f"/v2/volumes/{volume_id}/actions", json=body)
        return _volume_action_from(data["action"], volume_id)

    def rate_limit(self) -> RateLimitSnapshot:
        """The latest rate-limit headers any worker sharing the budget has seen."""
        return self.budget.snapshot()

    # -- transport ----------------------------------------------------------------------------

    def _paginate(self, path: str, key: str, params: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        url: str = path
        query: dict[str, Any] | None = {**params, "per_page": self.per_page, "page": 1}
        for _ in range(MAX_PAGES):
            data = self._request("GET", url, params=query)
            yield from data.get(key) or []
            next_url = ((data.get("links") or {}).get("pages") or {}).get("next")
            if not next_url:
                return
            url, query = self._same_origin_path(next_url), None
        raise ProviderTransientError(f"pagination of {path} did not end after {MAX_PAGES} pages")

    def _same_origin_path(self, link: str) -> str:
        """Follow a pagination link only on our own origin, so the token never goes elsewhere."""
        parts = urlsplit(link)
        if parts.scheme and (parts.scheme, parts.netloc) != self._origin:
            # DigitalOcean's links are absolute; behind a proxy or with the emulator the host can
            # differ from base_url. Keep the path and query, drop the foreign origin.
            logger.debug("pagination link on another origin; using its path only")
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def _request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        create_tag: str | None = None,
    ) -> dict[str, Any]:
        """Send with bounded retries; `create_tag` marks the non-idempotent create (module doc)."""
        last: ProviderTransientError | None = None
        for attempt in range(1, self.max_attempts + 1):
            self.budget.acquire()
            try:
                response = self._client.request(method, url, params=params, json=json)
            except egress.EgressRefused as exc:
                raise ProviderPermanentError(f"{method} {_path(url)}: {exc}") from exc
            except _NOT_SENT as exc:
                last = ProviderTransientError(f"{method} {_path(url)}: {type(exc).__name__}: {exc}")
                delay = self._backoff(attempt)
            except httpx.TransportError as exc:
                # read/write timeout, dropped connection: the server may have acted
                if create_tag is not None:
                    raise ProviderAmbiguousCreate(
                        f"create outcome unknown ({type(exc).__name__}); look up {create_tag}",
                        tag=create_tag,
                    ) from exc
                last = ProviderTransientError(f"{method} {_path(url)}: {type(exc).__name__}: {exc}")
                delay = self._backoff(attempt)
            else:
                self.budget.observe(response.headers)
                if response.is_success:
                    return response.json() if response.content else {}
                error = self._error_from(response)
                if response.status_code == 404:
                    raise ProviderNotFound(**error)
                if response.status_code == 429:
                    hint, reset_at, remaining = _rate_limit_wait(response)
                    delay = hint if hint is not None else self._backoff(attempt)
                    last = ProviderRateLimited(
                        retry_after=delay, reset_at=reset_at, remaining=remaining, **error
                    )
                elif response.status_code >= 500:
                    if create_tag is not None:
                        raise ProviderAmbiguousCreate(
                            f"create answered HTTP {response.status_code} ({error['message']}); "
                            f"look up {create_tag} before creating again",
                            tag=create_tag,
                            status=error["status"],
                            id=error["id"],
                            request_id=error["request_id"],
                        )
                    delay = self._backoff(attempt)
                    last = ProviderTransientError(retry_after=delay, **error)
                elif _is_pending_event(response, error):
                    # 422 "Droplet already has a pending event": a destroy while it is created.
                    delay = self._backoff(attempt)
                    last = ProviderPendingEvent(retry_after=delay, **error)
                else:
                    raise ProviderPermanentError(**error)
            if attempt == self.max_attempts or delay > self.max_retry_wait_s:
                break
            logger.info(
                "%s %s: %s; retry %d/%d in %.2fs",
                method,
                _path(url),
                last,
                attempt,
                self.max_attempts - 1,
                delay,
            )
            self._sleep(delay)
        assert last is not None
        raise last

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with full jitter (AWS architecture blog), capped."""
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)  # noqa: S311 - jitter, not crypto

    @staticmethod
    def _error_from(response: httpx.Response) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        message = body.get("message") or response.reason_phrase or f"HTTP {response.status_code}"
        attributes = body.get("error_attributes")
        return {
            "message": str(message),
            "status": response.status_code,
            "id": body.get("id"),
            "request_id": body.get("request_id") or response.headers.get("x-request-id"),
            "attributes": attributes if isinstance(attributes, dict) else None,
        }


def _rate_limit_wait(response: httpx.Response) -> tuple[float | None, float | None, int | None]:
    """(seconds to wait or None, `ratelimit-reset` as Unix time, `ratelimit-remaining`) of a 429.

    `retry-after` (seconds or an HTTP date) when given; else, with the hourly quota spent or its
    state unknown, until `ratelimit-reset`; else (quota left: the per-minute burst limit) until
    that reset but no longer than the burst window.
    """
    reset_at = remaining = None
    with contextlib.suppress(KeyError, ValueError):
        reset_at = float(response.headers["ratelimit-reset"])
    with contextlib.suppress(KeyError, ValueError):
        remaining = int(float(response.headers["ratelimit-remaining"]))
    value = response.headers.get("retry-after")
    if value:
        try:
            return max(0.0, float(value)), reset_at, remaining
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
                return max(0.0, when.timestamp() - time.time()), reset_at, remaining
            except (TypeError, ValueError):
                pass
    if reset_at is None:
        return None, reset_at, remaining
    until_reset = max(0.0, reset_at - time.time())
    if remaining is not None and remaining > 0:
        return min(until_reset, _BURST_WINDOW_S), reset_at, remaining
    return until_reset, reset_at, remaining


def _is_no_capacity(message: str) -> bool:
    text = message.lower()
    return any(marker in text for marker in _NO_CAPACITY_MARKERS)


def _is_pending_event(response: httpx.Response, error: Mapping[str, Any]) -> bool:
    return (
        response.status_code == 422
        and response.request.method == "DELETE"
        and "pending event" in str(error.get("message", "")).lower()
    )


def _path(url: str) -> str:
    return urlsplit(url).path or url


def _parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _decimal(value: Any) -> Decimal:
    # via str(): the JSON float 1.99 must become Decimal("1.99"), not 1.9899999…
    return Decimal(str(value)) if value is not None else Decimal("0")


def _droplet_from(data: Mapping[str, Any]) -> Droplet:
    networks = data.get("networks") or {}
    public = private = None
    for net in networks.get("v4") or []:
        if net.get("type") == "public" and public is None:
            public = net.get("ip_address")
        elif net.get("type") == "private" and private is None:
            private = net.get("ip_address")
    region = data.get("region") or {}
    image = data.get("image") or {}
    gpu = data.get("gpu_info") or (data.get("size") or {}).get("gpu_info") or {}
    tags = tuple(data.get("tags") or ())
    return Droplet(
        id=int(data["id"]),
        name=str(data.get("name", "")),
        status=data.get("status", "new"),
        size_slug=str(data.get("size_slug") or (data.get("size") or {}).get("slug") or ""),
        region=str(region.get("slug", "") if isinstance(region, dict) else region),
        image=(image.get("slug") if isinstance(image, dict) else None),
        tags=tags,
        public_ipv4=public,
        private_ipv4=private,
        created_at=_parse_time(data.get("created_at")),
        gpu_count=gpu.get("count"),
        gpu_model=gpu.get("model"),
    )


def _volume_from(data: Mapping[str, Any]) -> Volume:
    region = data.get("region") or {}
    return Volume(
        id=str(data["id"]),
        name=str(data.get("name", "")),
        region=str(region.get("slug", "") if isinstance(region, dict) else region),
        size_gb=int(data.get("size_gigabytes") or 0),
        droplet_ids=tuple(int(d) for d in data.get("droplet_ids") or ()),
        tags=tuple(data.get("tags") or ()),
        created_at=_parse_time(data.get("created_at")),
    )


def _volume_action_from(data: Mapping[str, Any], volume_id: str) -> VolumeAction:
    return VolumeAction(
        id=int(data["id"]),
        volume_id=volume_id,
        type=str(data.get("type", "")),
        status=data.get("status") or "in-progress",
        started_at=_parse_time(data.get("started_at")),
    )


def _size_from(data: Mapping[str, Any]) -> Size:
    gpu = data.get("gpu_info") or {}
    vram = gpu.get("vram") or {}
    return Size(
        slug=str(data["slug"]),
        description=str(data.get("description", "")),
        price_hourly=_decimal(data.get("price_hourly")),
        price_monthly=_decimal(data.get("price_monthly")),
        vcpus=int(data.get("vcpus", 0)),
        memory_mb=int(data.get("memory", 0)),
        disk_gb=int(data.get("disk", 0)),
        regions=tuple(data.get("regions") or ()),
        available=bool(data.get("available", True)),
        gpu_count=gpu.get("count"),
        gpu_model=gpu.get("model"),
        gpu_vram_gib=vram.get("amount"),
    )


__all__ = [
    "DEFAULT_BASE_URL",
    "DigitalOceanDriver",
    "ProviderError",
    "node_id_from_tags",
]

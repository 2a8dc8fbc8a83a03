"""The HTTP surface: DigitalOcean's API subset under /v2, the admin API under /_emulator.

Every /v2 request goes through `_api()`: the per-token rate limits (DigitalOcean's two: 250/minute
burst and 5,000/hour; the `ratelimit-*` headers on every answer, 401s included, describe the hourly
one, but a burst 429 shows `ratelimit-remaining: 0`), bearer auth, injected faults, then the
operation. Errors use DigitalOcean's body
`{"id", "message", "request_id"}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
import random
import time
import uuid
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from . import catalog
from .agents import AgentSupervisor
from .settings import REALISTIC_BOOT_DELAY_S, EmulatorSettings
from .state import PENDING_EVENT, ApiError, EmuDroplet, Store, not_found, unprocessable

logger = logging.getLogger("emulator")

Handler = Callable[[Request], Awaitable[tuple[int, Any]]]


class RateLimiter:
    """Sliding windows per token, like DigitalOcean's burst (per-minute) and hourly limits."""

    def __init__(self) -> None:
        #: (token hash, window index) -> times of the requests charged to that window
        self._log: dict[tuple[str, int], deque[float]] = defaultdict(deque)

    def check(
        self, key: str, windows: list[tuple[int, float]], now: float
    ) -> tuple[int | None, list[tuple[int, float]]]:
        """Charge one request to every window unless one is full.

        Returns (index of the first full window or None, [(remaining, reset) per window]) where
        `reset` is when the window's oldest request expires (DigitalOcean's `ratelimit-reset`).
        """
        logs = []
        for index, (limit, window_s) in enumerate(windows):
            log = self._log[(key, index)]
            while log and log[0] <= now - window_s:
                log.popleft()
            logs.append((log, limit, window_s))
        blocked = next((i for i, (log, limit, _) in enumerate(logs) if len(log) >= limit), None)
        if blocked is None:
            for log, _, _ in logs:
                log.append(now)
        status = []
        for log, limit, window_s in logs:
            reset = log[0] + window_s if log else now + window_s
            status.append((max(0, limit - len(log)), reset))
        return blocked, status

    def slot_frees_at(self, key: str, index: int, limit: int, window_s: float) -> float:
        """When the next request fits into window `index` (full) again."""
        log = self._log[(key, index)]
        return log[len(log) - limit] + window_s if len(log) >= limit else 0.0

    def reset(self) -> None:
        self._log.clear()


class Counters:
    def __init__(self) -> None:
        self.requests = 0
        self.by_status: dict[str, int] = defaultdict(int)
        self.by_route: dict[str, int] = defaultdict(int)
        self.rate_limited = 0
        self.faults_injected = 0
        self.creates = 0
        self.deletes = 0
        self.peak_per_minute = 0
        self._last_minute: deque[float] = deque()

    def hit(self, route: str, now: float) -> None:
        self.requests += 1
        self.by_route[route] += 1
        self._last_minute.append(now)
        while self._last_minute and self._last_minute[0] <= now - 60:
            self._last_minute.popleft()
        self.peak_per_minute = max(self.peak_per_minute, len(self._last_minute))

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "by_status": dict(self.by_status),
            "by_route": dict(self.by_route),
            "rate_limited": self.rate_limited,
            "faults_injected": self.faults_injected,
            "creates": self.creates,
            "deletes": self.deletes,
            "peak_requests_per_minute": self.peak_per_minute,
        }


class Emulator:
    def __init__(self, settings: EmulatorSettings) -> None:
        self.settings = settings
        self.store = Store(state_file=settings.state_file, ip_mode=settings.ip_mode)
        if settings.stock:  # the command line's stock wins over what the state file remembers
            self.store.faults.update({"stock": settings.stock})
        if settings.idle_after:  # likewise the command line's idle tags
            self.store.faults.update({"idle_after": settings.idle_after})
        work_dir = settings.state_file.parent if settings.state_file else None
        self.agents = AgentSupervisor(agent_cmd=settings.agent_cmd, work_dir=work_dir)
        self.agents.adopt(self.store.droplets)
        self.limiter = RateLimiter()
        self.counters = Counters()

    def warn_if_shortened(self) -> None:
        if self.settings.boot_delay_s < REALISTIC_BOOT_DELAY_S:
            logger.warning(
                "running with a SHORTENED boot time: droplets turn active %.1fs after create "
                "(realistic GPU boot: %.0fs, the default); fine for tests and demos only",
                self.settings.boot_delay_s,
                REALISTIC_BOOT_DELAY_S,
            )

    # -- time ---------------------------------------------------------------------------------

    def tick(self) -> None:
        activated, removed = self.store.advance()
        for droplet in removed:
            self.agents.stop(droplet)
        for droplet in activated:
            logger.info("droplet %s (%s) is active", droplet.id, droplet.name)
        # (re)start agents of active droplets that have none yet: new ones, and after a restart
        for droplet in self.store.droplets.values():
            if droplet.status == "active" and droplet.agent.status == "pending":
                data_gb = next(
                    (
                        v["size_gigabytes"]
                        for v in self.store.volumes.values()
                        if droplet.id in v["droplet_ids"]
                    ),
                    None,
                )
                self.agents.start(droplet, self.store.faults, data_gb=data_gb)
                self.store.dirty = True
        if self.agents.poll(self.store.droplets):
            self.store.dirty = True
        if self.store.dirty:
            self.store.save()

    async def ticker(self) -> None:
        while True:
            try:
                self.tick()
            except Exception:  # a bad tick must not stop time for the whole emulator
                logger.exception("emulator tick failed")
            await asyncio.sleep(self.settings.tick_s)

    # -- helpers ------------------------------------------------------------------------------

    def base_url(self, request: Request) -> str:
        if self.settings.public_url:
            return self.settings.public_url.rstrip("/")
        return f"{request.url.scheme}://{request.url.netloc}"

    def paginate(
        self, request: Request, items: list[Any], key: str, extra: dict[str, str]
    ) -> dict[str, Any]:
        try:
            page = int(request.query_params.get("page", "1"))
            per_page = int(request.query_params.get("per_page", "20"))
        except ValueError as exc:
            raise ApiError(400, "bad_request", "page and per_page must be integers.") from exc
        if page < 1 or per_page < 1:
            raise ApiError(400, "bad_request", "page and per_page must be at least 1.")
        per_page = min(per_page, self.settings.max_per_page)
        total = len(items)
        last = max(1, math.ceil(total / per_page))
        chunk = items[(page - 1) * per_page : page * per_page]

        def link(n: int) -> str:
            query = urlencode({**extra, "page": n, "per_page": per_page})
            return f"{self.base_url(request)}{request.url.path}?{query}"

        pages: dict[str, str] = {}
        if page > 1:
            pages["first"] = link(1)
            pages["prev"] = link(min(page - 1, last))
        if page < last:
            pages["next"] = link(page + 1)
            pages["last"] = link(last)
        return {key: chunk, "links": {"pages": pages} if pages else {}, "meta": {"total": total}}

    # -- /v2 operations -----------------------------------------------------------------------

    async def list_droplets(self, request: Request) -> tuple[int, Any]:
        q = request.query_params
        kind, tag_name, name = q.get("type"), q.get("tag_name"), q.get("name")
        droplets = self.store.listing(kind=kind, tag_name=tag_name, name=name)
        extra = {k: v for k, v in (("type", kind), ("tag_name", tag_name), ("name", name)) if v}
        now = time.time()
        return 200, self.paginate(
            request, [self.store.to_api(d, now) for d in droplets], "droplets", extra
        )

    async def create_droplet(self, request: Request) -> tuple[int, Any]:
        try:
            body = await request.json()
        except ValueError as exc:
            raise ApiError(400, "bad_request", "The request body is not valid JSON.") from exc
        timing = {
            "boot_delay_s": self.settings.boot_delay_s,
            "ip_delay_s": self.settings.ip_delay_s,
        }
        if isinstance(body, dict) and "names" in body:
            droplets = self.store.create_many(body, **timing)
        else:
            droplets = [self.store.create(body, **timing)]
        self.counters.creates += len(droplets)
        self.store.save()
        for droplet in droplets:
            logger.info("created droplet %s (%s, %s)", droplet.id, droplet.name, droplet.size_slug)
        links = {
            "actions": [
                {
                    "id": d.create_action_id,
                    "rel": "create",
                    "href": f"{self.base_url(request)}/v2/actions/{d.create_action_id}",
                }
                for d in droplets
            ]
        }
        if isinstance(body, dict) and "names" in body:
            return 202, {"droplets": [self.store.to_api(d) for d in droplets], "links": links}
        return 202, {"droplet": self.store.to_api(droplets[0]), "links": links}

    def _droplet_id(self, request: Request) -> int:
        try:
            droplet_id = int(request.path_params["droplet_id"])
        except ValueError as exc:
            raise not_found() from exc
        return droplet_id

    async def get_droplet(self, request: Request) -> tuple[int, Any]:
        droplet = self.store.get(self._droplet_id(request))
        return 200, {"droplet": self.store.to_api(droplet)}

    async def delete_droplet(self, request: Request) -> tuple[int, Any]:
        droplet = self.store.delete(self._droplet_id(request))
        self._after_delete(droplet)
        return 204, None

    async def delete_by_tag(self, request: Request) -> tuple[int, Any]:
        tag = request.query_params.get("tag_name")
        if not tag:
            raise unprocessable("tag_name is required.")
        tagged = [d for d in self.store.droplets.values() if tag in d.tags]
        if any(self.store.pending_create(d) for d in tagged):
            # all or nothing: a droplet still being created refuses, so none is deleted
            raise unprocessable(PENDING_EVENT)
        for droplet in tagged:
            self._after_delete(self.store.delete(droplet.id))
        return 204, None

    def _after_delete(self, droplet: EmuDroplet) -> None:
        self.counters.deletes += 1
        # the machine stops at once even when the API keeps showing it for a while
        self.agents.stop(droplet)
        self.tick()

    async def list_droplet_actions(self, request: Request) -> tuple[int, Any]:
        now = time.time()
        actions = self.store.droplet_actions(self._droplet_id(request))
        items = [self.store.action_json(a, now) for a in actions]
        return 200, self.paginate(request, items, "actions", {})

    async def post_droplet_action(self, request: Request) -> tuple[int, Any]:
        action = self.store.droplet_action(
            self._droplet_id(request),
            await self._json(request),
            delay_s=self.settings.shutdown_s,
        )
        self.agents.stop(self.store.get(action["droplet_id"]))  # the machine goes down
        self.store.save()
        return 201, {"action": self.store.action_json(action)}

    async def get_action(self, request: Request) -> tuple[int, Any]:
        try:
            action_id = int(request.path_params["action_id"])
        except ValueError as exc:
            raise not_found() from exc
        return 200, {"action": self.store.action_json(self.store.get_action(action_id))}

    async def list_actions(self, request: Request) -> tuple[int, Any]:
        now = time.time()
        items = [self.store.action_json(a, now) for a in self.store.all_actions()]
        return 200, self.paginate(request, items, "actions", {})

    async def list_images(self, request: Request) -> tuple[int, Any]:
        """Public images only (the account has no private or tagged ones); `type=distribution`
        keeps the OS images (all of ours: `type: base`), `type=application` has none."""
        q = request.query_params
        kind, private, tag = q.get("type"), q.get("private"), q.get("tag_name")
        images = list(catalog.IMAGES)
        if kind == "application" or private == "true" or tag:
            images = []
        extra = {k: v for k, v in (("type", kind), ("private", private), ("tag_name", tag)) if v}
        items = [catalog.image_json(image) for image in images]
        return 200, self.paginate(request, items, "images", extra)

    async def get_image(self, request: Request) -> tuple[int, Any]:
        """By id or, for public images, by slug (the spec's images_get `image_id`)."""
        image = catalog.find_image(str(request.path_params["image_id"]))
        if image is None:
            raise not_found()
        return 200, {"image": catalog.image_json(image)}

    async def get_ssh_key(self, request: Request) -> tuple[int, Any]:
        return 200, {"ssh_key": self.store.get_ssh_key(str(request.path_params["key"]))}

    async def list_sizes(self, request: Request) -> tuple[int, Any]:
        sizes = [
            {
                **catalog.size_json(size, self.store.regions_with_stock(size["slug"])),
                **self.store.price_overrides.get(size["slug"], {}),
            }
            for size in catalog.SIZES
        ]
        return 200, self.paginate(request, sizes, "sizes", {})

    async def list_regions(self, request: Request) -> tuple[int, Any]:
        regions = [catalog.region_json(slug, self.store.in_stock) for slug in catalog.REGION_NAMES]
        return 200, self.paginate(request, regions, "regions", {})

    async def list_ssh_keys(self, request: Request) -> tuple[int, Any]:
        keys = sorted(self.store.ssh_keys.values(), key=lambda k: int(k["id"]))
        return 200, self.paginate(request, keys, "ssh_keys", {})

    async def create_ssh_key(self, request: Request) -> tuple[int, Any]:
        try:
            body = await request.json()
        except ValueError as exc:
            raise ApiError(400, "bad_request", "The request body is not valid JSON.") from exc
        key = self.store.add_ssh_key(body)
        self.store.save()
        return 201, {"ssh_key": key}

    # -- volumes ------------------------------------------------------------------------------

    async def _json(self, request: Request) -> Any:
        try:
            return await request.json()
        except ValueError as exc:
            raise ApiError(400, "bad_request", "The request body is not valid JSON.") from exc

    def _volume(self, request: Request) -> dict[str, Any]:
        return self.store.get_volume(str(request.path_params["volume_id"]))

    async def list_volumes(self, request: Request) -> tuple[int, Any]:
        name, region = request.query_params.get("name"), request.query_params.get("region")
        volumes = self.store.volume_listing(name=name, region=region)
        extra = {k: v for k, v in (("name", name), ("region", region)) if v}
        items = [self.store.volume_to_api(v) for v in volumes]
        return 200, self.paginate(request, items, "volumes", extra)

    async def create_volume(self, request: Request) -> tuple[int, Any]:
        volume = self.store.create_volume(await self._json(request))
        self.store.save()
        logger.info("created volume %s (%s, %s)", volume["id"], volume["name"], volume["region"])
        return 201, {"volume": self.store.volume_to_api(volume)}

    async def delete_volume_by_name(self, request: Request) -> tuple[int, Any]:
        name, region = request.query_params.get("name"), request.query_params.get("region")
        if not region:
            raise unprocessable("Deleting by name needs both name and region.")
        self.store.delete_volume(self.store.find_volume_by_name(name, region))
        self.store.save()
        return 204, None

    async def get_volume(self, request: Request) -> tuple[int, Any]:
        return 200, {"volume": self.store.volume_to_api(self._volume(request))}

    async def delete_volume(self, request: Request) -> tuple[int, Any]:
        self.store.delete_volume(self._volume(request))
        self.store.save()
        return 204, None

    async def volume_action_by_name(self, request: Request) -> tuple[int, Any]:
        """`POST /v2/volumes/actions`: attach or detach, the volume named in the body (resize
        exists only by id)."""
        body = await self._json(request)
        if not isinstance(body, dict):
            raise ApiError(400, "bad_request", "The request body must be a JSON object.")
        volume = self.store.find_volume_by_name(body.get("volume_name"), body.get("region"))
        return self._volume_act(volume, body, allowed=("attach", "detach"))

    async def volume_action_by_id(self, request: Request) -> tuple[int, Any]:
        volume = self._volume(request)
        return self._volume_act(volume, await self._json(request))

    def _volume_act(
        self,
        volume: dict[str, Any],
        body: Any,
        allowed: tuple[str, ...] = ("attach", "detach", "resize"),
    ) -> tuple[int, Any]:
        action = self.store.volume_action(
            volume, body, delay_s=self.settings.volume_action_s, allowed=allowed
        )
        self.store.save()
        return 202, {"action": self.store.action_json(action)}

    async def list_volume_actions(self, request: Request) -> tuple[int, Any]:
        volume = self._volume(request)
        now = time.time()
        items = [self.store.action_json(a, now) for a in self.store.volume_actions(volume["id"])]
        return 200, self.paginate(request, items, "actions", {})

    async def get_volume_action(self, request: Request) -> tuple[int, Any]:
        volume = self._volume(request)
        try:
            action = self.store.get_action(int(request.path_params["action_id"]))
        except ValueError as exc:
            raise not_found() from exc
        if action.get("volume_id") != volume["id"]:
            raise not_found()
        return 200, {"action": self.store.action_json(action)}

    async def list_volume_snapshots(self, request: Request) -> tuple[int, Any]:
        volume = self._volume(request)
        snapshots = [s for s in self.store.snapshots.values() if s["resource_id"] == volume["id"]]
        return 200, self.paginate(request, snapshots, "snapshots", {})

    async def create_volume_snapshot(self, request: Request) -> tuple[int, Any]:
        snapshot = self.store.create_snapshot(self._volume(request), await self._json(request))
        self.store.save()
        return 201, {"snapshot": snapshot}

    async def get_account(self, request: Request) -> tuple[int, Any]:
        return 200, {
            "account": {
                "droplet_limit": 1000,
                "floating_ip_limit": 10,
                "email": "lab@example.org",
                "uuid": "6f1c2d8e-0b5a-4a8e-9d0e-1f2a3b4c5d6e",
                "email_verified": True,
                "status": "active",
                "status_message": "",
            }
        }

    # -- the /v2 pipeline ---------------------------------------------------------------------

    def _error(self, status: int, error_id: str, message: str) -> tuple[int, Any]:
        return status, {"id": error_id, "message": message}

    async def _api(self, request: Request, route: str, handler: Handler) -> Response:
        now = time.time()
        request_id = str(uuid.uuid4())
        self.counters.hit(route, now)
        headers: dict[str, str] = {"x-request-id": request_id}

        auth = request.headers.get("authorization", "")
        token = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        authorized = bool(token) and (not self.settings.tokens or token in self.settings.tokens)

        # Every answer carries the ratelimit-* headers, 401s included (the spec's `unauthorized`
        # response lists them); a refused request counts against what it presented: its token,
        # else the client's address.
        client = request.client.host if request.client else ""
        key = hashlib.sha256((token or f"anonymous:{client}").encode()).hexdigest()
        burst = (self.settings.rate_limit, self.settings.rate_window_s)
        hourly = (self.settings.rate_limit_hourly, self.settings.rate_window_hourly_s)
        blocked, status = self.limiter.check(key, [burst, hourly], now)
        remaining, reset = status[1]
        if blocked == 0:
            # DigitalOcean's "Sample Rate Limit Headers When Burst Limit is Reached":
            # `ratelimit-remaining: 0` beside `retry-after`, whatever the hour has left
            remaining = 0
        headers.update(
            {
                "ratelimit-limit": str(self.settings.rate_limit_hourly),
                "ratelimit-remaining": str(remaining),
                "ratelimit-reset": str(math.ceil(reset)),
            }
        )
        if not authorized:
            return self._respond(
                401,
                {"id": "unauthorized", "message": "Unable to authenticate you"},
                headers,
                request_id,
            )
        if blocked is not None:
            self.counters.rate_limited += 1
            if blocked == 0:
                # Only the burst limit's 429 says when to come back (DigitalOcean added
                # `retry-after` there in 2023); an exhausted hourly quota has only `ratelimit-*`.
                frees_at = self.limiter.slot_frees_at(key, 0, *burst)
                headers["retry-after"] = str(max(1, math.ceil(frees_at - now)))
            return self._respond(
                429,
                {"id": "too_many_requests", "message": "API rate limit exceeded."},
                headers,
                request_id,
            )

        faults = self.store.faults
        rule = faults.take_rule(request.method, request.url.path)
        if rule is not None:
            self.counters.faults_injected += 1
            self.store.save()
            status, body = 0, None
            if rule.get("after_create") or "status" not in rule:
                status, body = await self._run(request, handler)
            if rule.get("delay_s"):
                await asyncio.sleep(float(rule["delay_s"]))
            if "status" in rule:
                status = int(rule["status"])
                body = {"id": _error_id(status), "message": rule.get("message") or _message(status)}
            if "retry_after" in rule:  # an injected 429 that says when to come back, as bursts do
                headers["retry-after"] = str(max(0, int(rule["retry_after"])))
            return self._respond(status, body, headers, request_id)

        if faults.error_rate_5xx and random.random() < faults.error_rate_5xx:  # noqa: S311
            self.counters.faults_injected += 1
            return self._respond(
                500, {"id": "server_error", "message": _message(500)}, headers, request_id
            )

        status, body = await self._run(request, handler)
        if faults.timeout_rate and random.random() < faults.timeout_rate:  # noqa: S311
            # done, but answered too late: the client sees a timeout and cannot tell
            self.counters.faults_injected += 1
            await asyncio.sleep(faults.timeout_s)
        return self._respond(status, body, headers, request_id)

    async def _run(self, request: Request, handler: Handler) -> tuple[int, Any]:
        self.tick()  # droplets always show their up-to-date status
        try:
            return await handler(request)
        except ApiError as exc:
            return exc.status, exc.body()

    def _respond(
        self, status: int, body: Any, headers: dict[str, str], request_id: str
    ) -> Response:
        self.counters.by_status[str(status)] += 1
        if status == 204 or body is None:
            return Response(status_code=status, headers=headers, media_type="application/json")
        if status >= 400 and isinstance(body, dict):
            body = {**body, "request_id": request_id}
        return JSONResponse(body, status_code=status, headers=headers)

    # -- admin ----------------------------------------------------------------------------------

    def admin_state(self) -> dict[str, Any]:
        now = time.time()
        droplets = []
        for d in sorted(self.store.droplets.values(), key=lambda d: d.id):
            droplets.append(
                {
                    "id": d.id,
                    "name": d.name,
                    "status": d.status,
                    "size_slug": d.size_slug,
                    "region": d.region,
                    "tags": d.tags,
                    "gpu": d.is_gpu,
                    "public_ipv4": d.public_ip if now >= d.ip_at else None,
                    "created_at": d.created_at,
                    "active_at": d.active_at,
                    "vanish_at": d.vanish_at,
                    "gone_at": d.gone_at,
                    "ssh_keys": d.ssh_keys,
                    "create_action": d.create_action_id,
                    "pending_create": self.store.pending_create(d, now),
                    "user_data_bytes": len(d.user_data.encode()),
                    "agent": {
                        "status": d.agent.status,
                        "profile": d.agent.profile,
                        "pid": d.agent.pid,
                        "exit_code": d.agent.exit_code,
                        "starts": d.agent.starts,
                        "log": d.agent.log,
                    },
                }
            )
        return {
            "settings": self.settings.public(),
            "faults": asdict(self.store.faults),
            "counters": self.counters.as_dict(),
            "droplets": droplets,
            "ssh_keys": sorted(self.store.ssh_keys.values(), key=lambda k: int(k["id"])),
            "ledger": sorted(self.store.ledger.values(), key=lambda e: e["id"]),
            "volumes": [
                self.store.volume_to_api(v)
                for v in self.store.volume_listing(name=None, region=None)
            ],
            "snapshots": list(self.store.snapshots.values()),
            "volume_ledger": sorted(
                self.store.volume_ledger.values(), key=lambda e: (e["created_at"], e["id"])
            ),
        }


def _error_id(status: int) -> str:
    return {
        400: "bad_request",
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        422: "unprocessable_entity",
        429: "too_many_requests",
    }.get(status, "server_error" if status >= 500 else "error")


def _message(status: int) -> str:
    if status >= 500:
        return "Server Error"
    return {
        404: "The resource you were accessing could not be found.",
        429: "API rate limit exceeded.",
        422: "Unprocessable entity.",
    }.get(status, "Request failed.")


def create_app(settings: EmulatorSettings) -> Starlette:
    emu = Emulator(settings)

    def route(path: str, **handlers: tuple[str, Handler]) -> Route:
        """`path` with one handler per HTTP method, each under its contract operation id (the
        route the counters and the contract checks name)."""

        async def endpoint(request: Request) -> Response:
            # Starlette answers HEAD wherever GET is allowed: it is a GET without the body
            operation, handler = handlers["GET" if request.method == "HEAD" else request.method]
            return await emu._api(request, operation, handler)

        return Route(path, endpoint, methods=list(handlers))

    async def v2_not_found(request: Request) -> Response:
        async def handler(_: Request) -> tuple[int, Any]:
            raise not_found()

        return await emu._api(request, "unknown", handler)

    # -- admin endpoints (no auth: the emulator listens on 127.0.0.1 only) --

    async def health(_: Request) -> Response:
        return JSONResponse({"ok": True, "droplets": len(emu.store.droplets)})

    async def state(_: Request) -> Response:
        emu.tick()
        return JSONResponse(emu.admin_state())

    async def faults(request: Request) -> Response:
        if request.method == "POST":
            try:
                emu.store.faults.update(await request.json())
            except (ValueError, TypeError) as exc:
                return JSONResponse({"id": "bad_request", "message": str(exc)}, status_code=400)
            emu.store.save()
        elif request.method == "DELETE":
            emu.store.faults = type(emu.store.faults)()
            # back to the start-up stock and idle tags
            emu.store.faults.update(
                {"stock": emu.settings.stock, "idle_after": emu.settings.idle_after}
            )
            emu.store.save()
        return JSONResponse(asdict(emu.store.faults))

    async def admin_settings(request: Request) -> Response:
        if request.method == "POST":
            try:
                changes = await request.json()
                emu.settings.update(changes)
            except (ValueError, TypeError, AttributeError) as exc:
                return JSONResponse({"id": "bad_request", "message": str(exc)}, status_code=400)
            emu.agents.agent_cmd = emu.settings.agent_cmd
            emu.store.ip_mode = emu.settings.ip_mode
            if "boot_delay_s" in changes:
                emu.warn_if_shortened()
        return JSONResponse(emu.settings.public())

    async def reset(_: Request) -> Response:
        emu.agents.stop_all()
        emu.store.reset(stock=emu.settings.stock)
        emu.store.faults.update({"idle_after": emu.settings.idle_after})
        emu.store.save()
        emu.limiter.reset()
        emu.counters = Counters()
        return JSONResponse({"ok": True})

    async def seed(request: Request) -> Response:
        body = await request.json()
        try:
            made = emu.store.seed(
                count=int(body.get("count", 1)),
                size=str(body.get("size", "gpu-mi300x1-192gb")),
                region=body.get("region"),
                tags=list(body.get("tags", [])),
                name_prefix=str(body.get("name_prefix", "seeded-")),
                status=str(body.get("status", "active")),
            )
        except ApiError as exc:
            return JSONResponse(
                {"id": exc.error_id, "message": exc.message}, status_code=exc.status
            )
        emu.tick()
        return JSONResponse({"ids": [d.id for d in made]}, status_code=201)

    async def droplet_admin(request: Request) -> Response:
        try:
            droplet = emu.store.get(int(request.path_params["droplet_id"]))
        except (ApiError, ValueError):
            return JSONResponse({"id": "not_found", "message": "no such droplet"}, status_code=404)
        action = request.path_params["action"]
        if action == "vanish":
            emu.store.vanish(droplet.id)
            emu.agents.stop(droplet)
        elif action == "activate":
            emu.store.finish_create(droplet, time.time())
        else:
            return JSONResponse({"id": "not_found", "message": "unknown action"}, status_code=404)
        emu.store.dirty = True
        emu.tick()
        return JSONResponse({"ok": True, "id": droplet.id, "action": action})

    async def seed_volume(request: Request) -> Response:
        """Create a volume without the API (a volume someone made outside LabGPU)."""
        try:
            volume = emu.store.create_volume(await request.json())
        except ApiError as exc:
            return JSONResponse(exc.body(), status_code=exc.status)
        except ValueError:
            return JSONResponse({"id": "bad_request", "message": "invalid JSON"}, status_code=400)
        emu.store.save()
        return JSONResponse({"volume": emu.store.volume_to_api(volume)}, status_code=201)

    async def prices_admin(request: Request) -> Response:
        """A price list change: {"<size slug>": {"price_hourly": 2.5, "price_monthly": 1680}};
        GET shows the overrides. Reset restores the catalogue's prices."""
        if request.method == "POST":
            try:
                changes = await request.json()
                emu.store.set_prices(changes)
            except (ValueError, TypeError, AttributeError) as exc:
                return JSONResponse({"id": "bad_request", "message": str(exc)}, status_code=400)
            emu.store.save()
        return JSONResponse(emu.store.price_overrides)

    async def ssh_key_admin(request: Request) -> Response:
        """Register a key on the account without spending a request of the rate limit."""
        try:
            key = emu.store.add_ssh_key(await request.json())
        except ApiError as exc:
            return JSONResponse(exc.body(), status_code=exc.status)
        except ValueError:
            return JSONResponse({"id": "bad_request", "message": "invalid JSON"}, status_code=400)
        emu.store.save()
        return JSONResponse({"ssh_key": key}, status_code=201)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(emu.ticker())
        logger.info(
            "DigitalOcean emulator ready: boot delay %.1fs, %d req/%.0fs and %d req/%.0fs per "
            "token, state %s",
            settings.boot_delay_s,
            settings.rate_limit,
            settings.rate_window_s,
            settings.rate_limit_hourly,
            settings.rate_window_hourly_s,
            settings.state_file or "(memory)",
        )
        emu.warn_if_shortened()
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            emu.agents.stop_all()
            emu.store.save()

    routes = [
        route(
            "/v2/droplets",
            GET=("droplets_list", emu.list_droplets),
            POST=("droplets_create", emu.create_droplet),
            DELETE=("droplets_destroy_byTag", emu.delete_by_tag),
        ),
        route(
            "/v2/droplets/{droplet_id}",
            GET=("droplets_get", emu.get_droplet),
            DELETE=("droplets_destroy", emu.delete_droplet),
        ),
        route(
            "/v2/droplets/{droplet_id}/actions",
            GET=("dropletActions_list", emu.list_droplet_actions),
            POST=("dropletActions_post", emu.post_droplet_action),
        ),
        route("/v2/actions", GET=("actions_list", emu.list_actions)),
        route("/v2/actions/{action_id}", GET=("actions_get", emu.get_action)),
        route(
            "/v2/account/keys",
            GET=("sshKeys_list", emu.list_ssh_keys),
            POST=("sshKeys_create", emu.create_ssh_key),
        ),
        route("/v2/account/keys/{key}", GET=("sshKeys_get", emu.get_ssh_key)),
        route("/v2/images", GET=("images_list", emu.list_images)),
        route("/v2/images/{image_id}", GET=("images_get", emu.get_image)),
        route("/v2/sizes", GET=("sizes_list", emu.list_sizes)),
        route("/v2/regions", GET=("regions_list", emu.list_regions)),
        route("/v2/account", GET=("account_get", emu.get_account)),
        route(
            "/v2/volumes",
            GET=("volumes_list", emu.list_volumes),
            POST=("volumes_create", emu.create_volume),
            DELETE=("volumes_delete_byName", emu.delete_volume_by_name),
        ),
        route("/v2/volumes/actions", POST=("volumeActions_post", emu.volume_action_by_name)),
        route(
            "/v2/volumes/{volume_id}",
            GET=("volumes_get", emu.get_volume),
            DELETE=("volumes_delete", emu.delete_volume),
        ),
        route(
            "/v2/volumes/{volume_id}/actions",
            GET=("volumeActions_list", emu.list_volume_actions),
            POST=("volumeActions_post_byId", emu.volume_action_by_id),
        ),
        route(
            "/v2/volumes/{volume_id}/actions/{action_id}",
            GET=("volumeActions_get", emu.get_volume_action),
        ),
        route(
            "/v2/volumes/{volume_id}/snapshots",
            GET=("volumeSnapshots_list", emu.list_volume_snapshots),
            POST=("volumeSnapshots_create", emu.create_volume_snapshot),
        ),
        Route("/_emulator/volumes", seed_volume, methods=["POST"]),
        Route("/v2/{rest:path}", v2_not_found, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
        Route("/_emulator/health", health, methods=["GET"]),
        Route("/_emulator/state", state, methods=["GET"]),
        Route("/_emulator/faults", faults, methods=["GET", "POST", "DELETE"]),
        Route("/_emulator/settings", admin_settings, methods=["GET", "POST"]),
        Route("/_emulator/reset", reset, methods=["POST"]),
        Route("/_emulator/droplets", seed, methods=["POST"]),
        Route("/_emulator/droplets/{droplet_id}/{action}", droplet_admin, methods=["POST"]),
        Route("/_emulator/ssh_keys", ssh_key_admin, methods=["POST"]),
        Route("/_emulator/prices", prices_admin, methods=["GET", "POST"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.emulator = emu
    return app

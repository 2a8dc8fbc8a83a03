"""One request budget per provider token, shared by every worker through Redis.

DigitalOcean allows 250 requests/minute and 5,000/hour per token. With many Celery workers each
retrying on its own, only a shared budget keeps the fleet under that limit; 429s are the backstop,
not the plan. The budget is a sliding-window log (a sorted set of request timestamps per window),
checked and charged in one Lua script so two workers can never both take the last slot. Time comes
from Redis (`TIME`) so workers with skewed clocks agree.

The budget also remembers the provider's latest `ratelimit-remaining` / `ratelimit-reset` (which
describe DigitalOcean's hourly quota): until that reset, each request granted takes one off the
remembered `remaining`, and at 0 every worker waits for the reset instead of collecting 429s —
so another client on the same token, or a quota spent before a restart, is honoured too.

Keys hold a hash of the token, never the token.
"""

from __future__ import annotations

import hashlib
import logging
import math
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from .base import RateLimitSnapshot
from .errors import ProviderRateLimited

logger = logging.getLogger(__name__)

#: (requests, window seconds). A little under DigitalOcean's 250/min and 5,000/h, leaving room for
#: a human with doctl on the same token.
DEFAULT_WINDOWS: tuple[tuple[int, float], ...] = ((240, 60.0), (4800, 3600.0))
DEFAULT_KEY_PREFIX = "labgpu:provider-budget"


class BudgetExhausted(ProviderRateLimited):
    """The shared budget stays exhausted for longer than the caller is willing to wait;
    `retry_after` is when it frees (a rate limit of our own making, so a `ProviderRateLimited`)."""


class RequestBudget(Protocol):
    def acquire(self) -> None:
        """Block until one request may be sent (bounded); raise BudgetExhausted otherwise."""

    def observe(self, headers: Mapping[str, str]) -> None:
        """Record the provider's rate-limit headers from a response."""

    def snapshot(self) -> RateLimitSnapshot:
        """The latest provider headers seen by any worker sharing this budget."""


def token_fingerprint(token: str) -> str:
    """A stable, non-reversible name for a token, fit for Redis keys and logs."""
    return hashlib.sha256(token.encode()).hexdigest()[:24]


def _parse_headers(headers: Mapping[str, str]) -> tuple[int | None, int | None, float | None]:
    def as_int(name: str) -> int | None:
        value = headers.get(name)
        try:
            return int(float(value)) if value is not None else None
        except ValueError:
            return None

    reset = as_int("ratelimit-reset")
    remaining = as_int("ratelimit-remaining")
    retry_after = as_int("retry-after")
    if remaining == 0 and retry_after is not None:
        # A burst-limit 429 shows remaining 0 beside retry-after (DigitalOcean's sample headers)
        # while `ratelimit-reset` stays the hourly window's: the zero lasts only retry-after.
        burst_over = time.time() + retry_after
        reset = math.ceil(min(reset, burst_over) if reset else burst_over)
    return as_int("ratelimit-limit"), remaining, float(reset) if reset else None


# KEYS: one sorted set per window, then the hash of observed provider headers.
# ARGV: window count, then (limit, window ms) pairs, then a unique member for this request.
# Returns {1, 0} when charged, {0, wait_ms} when the caller must wait.
_ACQUIRE_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n_windows = tonumber(ARGV[1])
local wait = 0
local observed = KEYS[n_windows + 1]
local remaining = redis.call('HGET', observed, 'remaining')
local reset = redis.call('HGET', observed, 'reset')
local counts_down = false
if remaining and reset and tonumber(reset) * 1000 > now then
  if tonumber(remaining) <= 0 then
    wait = tonumber(reset) * 1000 - now
  else
    counts_down = true
  end
end
for i = 1, n_windows do
  local key = KEYS[i]
  local limit = tonumber(ARGV[2 * i])
  local window = tonumber(ARGV[2 * i + 1])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local used = redis.call('ZCARD', key)
  if used >= limit then
    -- the slot frees when the (used - limit + 1)-th oldest request leaves the window
    local oldest = redis.call('ZRANGE', key, used - limit, used - limit, 'WITHSCORES')
    local free_at = tonumber(oldest[2]) + window
    if free_at - now > wait then wait = free_at - now end
  end
end
if wait > 0 then
  return {0, wait}
end
local member = ARGV[2 * n_windows + 2]
for i = 1, n_windows do
  redis.call('ZADD', KEYS[i], now, member)
  redis.call('PEXPIRE', KEYS[i], ARGV[2 * i + 1])
end
if counts_down then redis.call('HINCRBY', observed, 'remaining', -1) end
return {1, 0}
"""


class RedisRequestBudget:
    """The shared budget. `redis_client` is a `redis.Redis` (or a URL to build one)."""

    def __init__(
        self,
        redis_client: object,
        token: str,
        *,
        windows: Sequence[tuple[int, float]] = DEFAULT_WINDOWS,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        max_wait_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import redis  # local: the driver must import even where the budget is in-memory

        if isinstance(redis_client, str):
            redis_client = redis.Redis.from_url(redis_client, socket_timeout=5)
        self._redis: redis.Redis = redis_client  # type: ignore[assignment]
        self._windows = tuple((int(n), float(s)) for n, s in windows)
        base = f"{key_prefix}:{token_fingerprint(token)}"
        self._window_keys = [f"{base}:w{int(s)}" for _, s in self._windows]
        self._observed_key = f"{base}:observed"
        self.max_wait_s = max_wait_s
        self._sleep = sleep
        self._script = self._redis.register_script(_ACQUIRE_LUA)
        self._warned_at = 0.0

    @property
    def keys(self) -> list[str]:
        return [*self._window_keys, self._observed_key]

    def _warn_redis_down(self, exc: Exception) -> None:
        # Fail open: without Redis we still honour the provider's 429s, so losing the budget costs
        # some 429s, whereas failing closed would stop every provision and teardown (and leak
        # droplets) for as long as Redis is down. Warn at most once a minute.
        now = time.monotonic()
        if now - self._warned_at > 60:
            self._warned_at = now
            logger.warning("provider request budget unavailable, proceeding without it: %s", exc)

    def acquire(self) -> None:
        import redis

        deadline = time.monotonic() + self.max_wait_s
        args: list[object] = [len(self._windows)]
        for limit, seconds in self._windows:
            args += [limit, int(seconds * 1000)]
        while True:
            try:
                ok, wait_ms = self._script(keys=self.keys, args=[*args, uuid.uuid4().hex])
            except redis.RedisError as exc:
                self._warn_redis_down(exc)
                return
            if int(ok) == 1:
                return
            # jitter so waiting workers do not all wake in the same millisecond
            wait = int(wait_ms) / 1000 + random.uniform(0, 0.05)  # noqa: S311
            if time.monotonic() + wait > deadline:
                raise BudgetExhausted(
                    "provider request budget exhausted; retry later", retry_after=wait
                )
            self._sleep(wait)

    def observe(self, headers: Mapping[str, str]) -> None:
        import redis

        limit, remaining, reset = _parse_headers(headers)
        if remaining is None:
            return
        mapping: dict[str, str] = {"remaining": str(remaining), "observed_at": f"{time.time():.3f}"}
        if limit is not None:
            mapping["limit"] = str(limit)
        if reset is not None:
            mapping["reset"] = str(int(reset))
        ttl_s = max(5, min(3600, int((reset or time.time()) - time.time()) + 5))
        try:
            pipe = self._redis.pipeline()
            pipe.hset(self._observed_key, mapping=mapping)
            pipe.expire(self._observed_key, ttl_s)
            pipe.execute()
        except redis.RedisError as exc:
            self._warn_redis_down(exc)

    def snapshot(self) -> RateLimitSnapshot:
        import redis

        try:
            raw = self._redis.hgetall(self._observed_key)
        except redis.RedisError as exc:
            self._warn_redis_down(exc)
            return RateLimitSnapshot()
        data = {
            (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in raw.items()  # type: ignore[union-attr]
        }
        return _snapshot_from(data)

    def used(self) -> list[int]:
        """Requests charged in each window right now (for tests and the admin view)."""
        now_ms = time.time() * 1000
        counts = []
        for key, (_, seconds) in zip(self._window_keys, self._windows, strict=True):
            counts.append(int(self._redis.zcount(key, now_ms - seconds * 1000, "+inf")))
        return counts


def _snapshot_from(data: Mapping[str, str]) -> RateLimitSnapshot:
    def num(name: str) -> float | None:
        try:
            return float(data[name]) if name in data else None
        except ValueError:
            return None

    limit, remaining = num("limit"), num("remaining")
    return RateLimitSnapshot(
        limit=int(limit) if limit is not None else None,
        remaining=int(remaining) if remaining is not None else None,
        reset_at=num("reset"),
        observed_at=num("observed_at"),
    )


class LocalRequestBudget:
    """The same budget inside one process, for a single worker, scripts and tests without Redis."""

    def __init__(
        self,
        *,
        windows: Sequence[tuple[int, float]] = DEFAULT_WINDOWS,
        max_wait_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._windows = tuple((int(n), float(s)) for n, s in windows)
        self._log: list[deque[float]] = [deque() for _ in self._windows]
        self._lock = threading.Lock()
        self._observed: dict[str, str] = {}
        self.max_wait_s = max_wait_s
        self._sleep = sleep

    def _try(self) -> float:
        now = time.time()
        wait = 0.0
        remaining, reset = self._observed.get("remaining"), self._observed.get("reset")
        counts_down = False
        if remaining is not None and reset is not None and float(reset) > now:
            if int(remaining) <= 0:
                wait = float(reset) - now
            else:
                counts_down = True
        for log, (limit, seconds) in zip(self._log, self._windows, strict=True):
            while log and log[0] <= now - seconds:
                log.popleft()
            if len(log) >= limit:
                wait = max(wait, log[len(log) - limit] + seconds - now)
        if wait > 0:
            return wait
        for log in self._log:
            log.append(now)
        if counts_down:
            self._observed["remaining"] = str(int(self._observed["remaining"]) - 1)
        return 0.0

    def acquire(self) -> None:
        deadline = time.monotonic() + self.max_wait_s
        while True:
            with self._lock:
                wait = self._try()
            if wait <= 0:
                return
            if time.monotonic() + wait > deadline:
                raise BudgetExhausted(
                    "provider request budget exhausted; retry later", retry_after=wait
                )
            self._sleep(wait)

    def observe(self, headers: Mapping[str, str]) -> None:
        limit, remaining, reset = _parse_headers(headers)
        if remaining is None:
            return
        with self._lock:
            self._observed = {"remaining": str(remaining), "observed_at": str(time.time())}
            if limit is not None:
                self._observed["limit"] = str(limit)
            if reset is not None:
                self._observed["reset"] = str(int(reset))

    def snapshot(self) -> RateLimitSnapshot:
        with self._lock:
            return _snapshot_from(dict(self._observed))

"""Redis as a cache that may be away (issue: broker outages never fail a request).

Redis is both the broker and the cache (throttle counters). When it is down, Django's RedisCache
raises on every call and each request would answer 500. This one degrades instead: reads miss,
writes are dropped, and the outage is logged once per minute. Throttles therefore fail open while
Redis is away — a deliberate trade (docs/operations.md): an outage of the cache must not become an
outage of the API. It fails fast (issue 29: a request costs at most ~0.2 s more with Redis away):
short socket timeouts, and after a failure a circuit breaker skips Redis for LABGPU_REDIS_BREAKER_S
(5 s), so only the first request of an outage (and one probe per period) waits for a timeout.
"""

import logging
import time
from typing import Any

from django.conf import settings
from django.core.cache.backends.redis import RedisCache, RedisCacheClient

from labgpu.core.breaker import breaker_for

logger = logging.getLogger(__name__)
# Redis answers in well under a millisecond; these only bound how long an absent one costs.
CONNECT_TIMEOUT_S = 0.05
SOCKET_TIMEOUT_S = 0.1
_DEFAULTS: dict[str, Any] = {
    "get": None,
    "get_many": {},
    "set": None,
    "set_many": [],
    "add": False,
    "touch": False,
    "delete": False,
    "delete_many": None,
    "has_key": False,
    "incr": None,  # replaced below: incr raises ValueError for a missing key
    "clear": None,
}


class ReusedClientRedisCacheClient(RedisCacheClient):
    """Django's client builds a new `redis.Redis` for every cache call, and each one rebuilds its
    table of ~170 response callbacks (~0.1 ms): two of them per throttled request. A client per
    connection pool, kept, does the same work once (redis.Redis is thread-safe over its pool)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


# A rate limit's sliding window in one atomic round trip (labgpu.api.throttling): the list holds
# the request times newest first, as DRF's SimpleRateThrottle keeps its history. Times older than
# the window fall off the end; a request is let in (and recorded) while fewer than `limit` remain.
# Returns {allowed, times in the window, the oldest of them}; numbers travel as strings so that
# Lua does not truncate them to integers.
SLIDING_WINDOW_LUA = """
local now, duration, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
while true do
  local oldest = redis.call('LINDEX', KEYS[1], -1)
  if not oldest or tonumber(oldest) > now - duration then break end
  redis.call('RPOP', KEYS[1])
end
local count = redis.call('LLEN', KEYS[1])
local allowed = 0
if count < limit then
  redis.call('LPUSH', KEYS[1], ARGV[1])
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  count = count + 1
  allowed = 1
end
return {allowed, count, redis.call('LINDEX', KEYS[1], -1) or ''}
"""


class ResilientRedisCache(RedisCache):
    _last_warning = 0.0
    _sliding_window_script: Any = None

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        options = params.setdefault("OPTIONS", {})
        # Fail fast when Redis is unreachable rather than hold the request for the OS timeout.
        options.setdefault("socket_connect_timeout", CONNECT_TIMEOUT_S)
        options.setdefault("socket_timeout", SOCKET_TIMEOUT_S)
        super().__init__(server, params)
        self._class = ReusedClientRedisCacheClient
        self.breaker = breaker_for("cache", str(server), open_for_s=settings.LABGPU_REDIS_BREAKER_S)

    def _away(self, method: str, error: Exception) -> None:
        self.breaker.failed()
        moment = time.monotonic()
        if moment - ResilientRedisCache._last_warning > 60:
            ResilientRedisCache._last_warning = moment
            logger.warning("cache unavailable (%s: %r); serving without it", method, error)

    def sliding_window(
        self, key: str, *, now: float, duration: int, limit: int
    ) -> tuple[bool, int, float | None] | None:
        """Let one request into the rate window `key` if fewer than `limit` came in the last
        `duration` seconds: (allowed, requests in the window, the oldest one's time), in one
        atomic round trip; None while Redis is away (the caller lets the request in)."""
        if not self.breaker.allows():
            return None
        try:
            client = self._cache.get_client(key, write=True)
            script = ResilientRedisCache._sliding_window_script
            if script is None:
                script = ResilientRedisCache._sliding_window_script = client.register_script(
                    SLIDING_WINDOW_LUA
                )
            allowed, count, oldest = script(
                keys=[self.make_and_validate_key(f"{key}:window")],
                args=[repr(now), duration, limit],
                client=client,
            )
        except Exception as error:  # redis-py's ConnectionError, TimeoutError, …
            self._away("sliding_window", error)
            return None
        self.breaker.succeeded()
        return bool(allowed), int(count), float(oldest) if oldest else None


def _resilient(name: str):  # type: ignore[no-untyped-def]
    original = getattr(RedisCache, name)

    def call(self: ResilientRedisCache, *args: Any, **kwargs: Any) -> Any:
        if not self.breaker.allows():
            return _unavailable(name, args, kwargs, None)
        try:
            result = original(self, *args, **kwargs)
        except ValueError:
            self.breaker.succeeded()  # Redis answered: the key was missing
            raise  # incr/decr of a missing key: the caller's business, not an outage
        except Exception as error:  # redis-py's ConnectionError, TimeoutError, …
            self._away(name, error)
            return _unavailable(name, args, kwargs, error)
        self.breaker.succeeded()
        return result

    call.__name__ = name
    return call


def _unavailable(name: str, args: tuple, kwargs: dict[str, Any], error: Exception | None) -> Any:
    """What a cache call answers while Redis is away."""
    if name in ("get", "get_many"):
        default = kwargs.get("default", args[1] if len(args) > 1 else None)
        return default if name == "get" else {}
    if name == "incr":
        raise ValueError("cache unavailable") from error
    return _DEFAULTS[name]


for _name in _DEFAULTS:
    setattr(ResilientRedisCache, _name, _resilient(_name))

"""Redis as a cache that may be away (issue: broker outages never fail a request).

Redis is both the broker and the cache (throttle counters). When it is down, Django's RedisCache
raises on every call and each request would answer 500. This one degrades instead: reads miss,
writes are dropped, and the outage is logged once per minute. Throttles therefore fail open while
Redis is away — a deliberate trade (docs/operations.md): an outage of the cache must not become an
outage of the API.
"""

import logging
import time
from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient

logger = logging.getLogger(__name__)
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


class ResilientRedisCache(RedisCache):
    _last_warning = 0.0

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        options = params.setdefault("OPTIONS", {})
        # Fail fast when Redis is unreachable rather than hold the request for the OS timeout.
        options.setdefault("socket_connect_timeout", 0.5)
        options.setdefault("socket_timeout", 1.0)
        super().__init__(server, params)
        self._class = ReusedClientRedisCacheClient

    def _away(self, method: str, error: Exception) -> None:
        moment = time.monotonic()
        if moment - ResilientRedisCache._last_warning > 60:
            ResilientRedisCache._last_warning = moment
            logger.warning("cache unavailable (%s: %r); serving without it", method, error)


def _resilient(name: str):  # type: ignore[no-untyped-def]
    original = getattr(RedisCache, name)

    def call(self: ResilientRedisCache, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        except ValueError:
            raise  # incr/decr of a missing key: the caller's business, not an outage
        except Exception as error:  # redis-py's ConnectionError, TimeoutError, …
            self._away(name, error)
            if name in ("get", "get_many"):
                default = kwargs.get("default", args[1] if len(args) > 1 else None)
                return default if name == "get" else {}
            if name == "incr":
                raise ValueError("cache unavailable") from error
            return _DEFAULTS[name]

    call.__name__ = name
    return call


for _name in _DEFAULTS:
    setattr(ResilientRedisCache, _name, _resilient(_name))

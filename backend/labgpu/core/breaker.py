"""A circuit breaker for a dependency that may be away (Redis as broker and cache).

After a failure the breaker is open for `open_for_s`: callers skip the dependency at once (the
outbox keeps the task, the cache misses) instead of each paying its timeout. Then one call is let
through to probe; its success closes the breaker, its failure opens it again. Per process: each
web or worker process learns of an outage by its own first failure.
"""

from __future__ import annotations

import threading
import time


class CircuitBreaker:
    def __init__(self, name: str, *, open_for_s: float) -> None:
        self.name = name
        self.open_for_s = open_for_s
        self._lock = threading.Lock()
        self._open_until = 0.0  # 0: closed

    def allows(self) -> bool:
        """Whether to call the dependency now: closed, or open long enough for one probe (the
        others keep skipping for another `open_for_s`, or until the probe succeeds)."""
        with self._lock:
            if self._open_until == 0.0:
                return True
            moment = time.monotonic()
            if moment < self._open_until:
                return False
            self._open_until = moment + self.open_for_s
            return True

    def failed(self) -> None:
        with self._lock:
            self._open_until = time.monotonic() + self.open_for_s

    def succeeded(self) -> None:
        with self._lock:
            self._open_until = 0.0

    @property
    def is_open(self) -> bool:
        return self._open_until != 0.0


_BREAKERS: dict[tuple[str, str], CircuitBreaker] = {}
_REGISTRY_LOCK = threading.Lock()


def breaker_for(name: str, address: str, *, open_for_s: float) -> CircuitBreaker:
    """The process's breaker for `name` at `address` (a Redis URL): one server's outage must not
    make callers skip another (tests run many throwaway servers in one process)."""
    with _REGISTRY_LOCK:
        breaker = _BREAKERS.get((name, address))
        if breaker is None:
            breaker = _BREAKERS[(name, address)] = CircuitBreaker(name, open_for_s=open_for_s)
        return breaker

"""One schedule, many beats: every beat process may run, one leads (issue: no single point of
failure in the schedule).

`LeaderScheduler` is Celery beat's own persistent scheduler behind a lock in the broker's Redis:
`SET labgpu:beat:leader <token> NX PX <ttl>`, renewed by its holder every tick (LABGPU_BEAT_TICK_S,
a second) and tried by every other beat as often. The one holding it sends the schedule; when it
dies, its lock lapses within LABGPU_BEAT_LOCK_S and another beat leads, sending at once every entry
that came due meanwhile (beat's catch-up): losing the beat delays the sweeps by seconds, not until
someone restarts it. Redis being the broker, a beat that cannot reach it could not send anything
anyway. Each tick uses a short-lived connection with timeouts, so a dead or wedged socket costs one
tick, never the beat. Without a Redis broker (the embedded filesystem broker: one process) the beat
always leads. Run a beat in every worker (`celery worker --beat`) or several `celery beat`
processes (docs/operations.md, "Failover").

The schedule's file is a plain `dbm.dumb` store, not shelve's default: on Python 3.13 that is
SQLite in WAL mode, and a beat restarted beside its SIGKILLed predecessor died on its first read
("locking protocol", after SQLite's ten seconds of retries), leaving the worker with no sweeps.
"""

import dbm.dumb
import logging
import secrets
import shelve
from typing import Any

import redis
from celery.beat import PersistentScheduler
from django.conf import settings

logger = logging.getLogger(__name__)
LOCK_KEY = "labgpu:beat:leader"
# Take the lock when free, extend it when ours, atomically: 1 when we hold it afterwards.
_TAKE_OR_RENEW = """
local holder = redis.call('get', KEYS[1])
if holder == ARGV[1] then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return 1
end
if not holder then
    redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return 1
end
return 0
"""


def lock_ttl_s() -> float:
    """How long a dead leader's lock outlives it (LABGPU_BEAT_LOCK_S, production 5 s)."""
    return float(settings.LABGPU_BEAT_LOCK_S)


def tick_s() -> float:
    """How often each beat takes or renews the lock (LABGPU_BEAT_TICK_S, production 1 s)."""
    return float(settings.LABGPU_BEAT_TICK_S)


class PlainFileStore:
    """What PersistentScheduler calls `persistence`: shelve over dbm.dumb (files NAME.dat and
    NAME.dir, which the scheduler's own clean-up of a corrupt schedule already knows)."""

    @staticmethod
    def open(filename: str, writeback: bool = False) -> shelve.Shelf:
        return shelve.Shelf(dbm.dumb.open(filename, "c"), writeback=writeback)


class LeaderScheduler(PersistentScheduler):
    persistence = PlainFileStore

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.token = secrets.token_hex(8)
        self.leading = False
        super().__init__(*args, **kwargs)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        if not self._lead():
            return tick_s()
        return min(super().tick(*args, **kwargs), tick_s())

    def _lead(self) -> bool:
        url = str(self.app.conf.broker_url or "")
        if not url.startswith(("redis://", "rediss://", "unix://")):
            return True  # the embedded broker: a single process, nothing to share
        ttl_ms = max(1, round(lock_ttl_s() * 1000))
        client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        try:
            held = bool(client.eval(_TAKE_OR_RENEW, 1, LOCK_KEY, self.token, ttl_ms))
        except redis.RedisError as error:
            # Our lock, if any, lapses on its own; another beat may take it meanwhile.
            logger.warning("beat: could not reach the schedule's lock: %r", error)
            held = False
        finally:
            client.close()
        if held != self.leading:
            logger.info("beat: %s the schedule", "leading" if held else "no longer leading")
        self.leading = held
        return held

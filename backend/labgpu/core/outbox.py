"""Tasks enqueued after commit, without trusting the broker to be there (issue: broker outages).

`enqueue_on_commit("labgpu.provisioning.tasks.provision_node", node.pk)` writes an outbox row in
the caller's transaction. After commit the row is published and deleted; if the broker is away
(Redis down, a closed connection pool, a timeout), publishing fails quietly, the request answers
normally, and `outbox_relay` (beat) publishes the row once the broker is back. The row and the
work it asks for commit together, so the work is never lost; a row may be published twice (a crash
between publish and delete), which is fine because every task is idempotent.

With the broker away a request costs at most ~0.2 s more than usual (issue 29): publishing uses a
connection of its own that tries once with short socket timeouts (`PUBLISH_TRANSPORT_OPTIONS`;
kombu's default retries the connect for 4 s and redis-py retries again, ~6 s per publish), and a
circuit breaker, once a publish failed, leaves publishing to the relay for
`LABGPU_REDIS_BREAKER_S` (5 s).
"""

import contextlib
import logging
import os
import threading
from datetime import timedelta
from typing import Any

import kombu.pools
from celery import current_app
from django.conf import settings
from django.db import transaction

from labgpu.core.breaker import CircuitBreaker, breaker_for
from labgpu.core.crashpoints import crash_point
from labgpu.core.models import OutboxMessage
from labgpu.core.timeutils import now

logger = logging.getLogger(__name__)
# Publishing must not hold a request up while the broker is away: one quick try, then the relay.
PUBLISH_RETRY_POLICY = {"max_retries": 0}
# One connect attempt (kombu's `max_retries`), each socket step bounded: connect, then the reply
# to a command (a broker that accepts but never answers, e.g. stopped with SIGSTOP).
PUBLISH_CONNECT_TIMEOUT_S = 0.05
PUBLISH_SOCKET_TIMEOUT_S = 0.1
PUBLISH_TRANSPORT_OPTIONS = {
    "max_retries": 0,
    "socket_connect_timeout": PUBLISH_CONNECT_TIMEOUT_S,
    "socket_timeout": PUBLISH_SOCKET_TIMEOUT_S,
    "retry_on_timeout": False,
}


def relay_after() -> timedelta:
    """A fresh row is the on-commit hook's to publish; the relay waits this long (settings'
    LABGPU_OUTBOX_RELAY_AFTER_S) so both rarely race."""
    return timedelta(seconds=settings.LABGPU_OUTBOX_RELAY_AFTER_S)


def broker_breaker() -> CircuitBreaker:
    """The breaker of the broker the app points at now."""
    return breaker_for(
        "broker", current_app.conf.broker_url, open_for_s=settings.LABGPU_REDIS_BREAKER_S
    )


class BrokerAway(Exception):
    """A publish was skipped: the broker failed moments ago (the breaker is open)."""


class _Publisher:
    """This process's publishing connection, made with PUBLISH_TRANSPORT_OPTIONS for the broker
    the app points at now (tests repoint it); one publish at a time, each takes ~1 ms."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connection: Any = None
        self._url: str | None = None

    def send(self, task: str, args: list[Any], countdown: float | None = None) -> None:
        with self._lock:
            # inside the lock: a thread that queued behind a failing publish skips at once
            breaker = broker_breaker()
            if not breaker.allows():
                raise BrokerAway(f"the broker failed in the last {breaker.open_for_s:g} s")
            try:
                current_app.send_task(
                    task,
                    args=args,
                    countdown=countdown,
                    retry=False,
                    retry_policy=PUBLISH_RETRY_POLICY,
                    connection=self._connect(),
                )
            except Exception:
                breaker.failed()
                self._drop()
                raise
        breaker.succeeded()

    def _connect(self) -> Any:
        app = current_app
        if self._connection is None or self._url != app.conf.broker_url:
            self._drop()
            self._url = app.conf.broker_url
            self._connection = app.connection_for_write(
                connect_timeout=PUBLISH_CONNECT_TIMEOUT_S,
                transport_options={
                    **(app.conf.broker_transport_options or {}),
                    **PUBLISH_TRANSPORT_OPTIONS,
                },
            )
        return self._connection

    def _drop(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.release()
        self._connection = None

    def reset(self) -> None:
        with self._lock:
            self._drop()
        broker_breaker().succeeded()

    def forget(self) -> None:
        """In a forked child: the parent's socket is not ours to use or close."""
        self._lock = threading.Lock()
        self._connection = None


_publisher = _Publisher()
os.register_at_fork(after_in_child=_publisher.forget)


def enqueue_on_commit(task: str, *args: Any, countdown: float = 0) -> None:
    """Run Celery task `task` (its dotted name) with `args` once the current transaction commits."""
    message = OutboxMessage.objects.create(
        task=task, args=list(args), not_before=now() + timedelta(seconds=countdown)
    )
    transaction.on_commit(lambda: _publish(message))


def publish_best_effort(task: str, *args: Any) -> bool:
    """Publish now, without an outbox row, for work a beat sweep re-drives anyway (a hot path
    that must not write a second row); returns whether the broker took it."""
    try:
        _publisher.send(task, list(args))
    except Exception as error:
        logger.warning("could not publish %s%s (the sweep will): %r", task, args, error)
        return False
    return True


def _publish(message: OutboxMessage) -> bool:
    crash_point("outbox.before_publish")
    countdown = max(0.0, (message.not_before - now()).total_seconds())
    try:
        _publisher.send(message.task, message.args, countdown=countdown or None)
    except Exception as error:  # any broker failure: the relay publishes it later
        logger.warning("outbox: could not publish %s%s: %r", message.task, message.args, error)
        return False
    OutboxMessage.objects.filter(pk=message.pk).delete()
    return True


def reset_broker_connections() -> None:
    """Drop the process's broker connection and producer pools after a failure. A pool that was
    closed (by a reconfiguration, or a connection error mid-acquire) answers every later publish
    with "Acquire on closed pool", even once the broker is back; fresh pools reconnect. kombu
    keeps its pools in process-wide groups keyed by broker URL, so those are reset too."""
    _publisher.reset()
    app = current_app
    with contextlib.suppress(Exception):
        app.pool.force_close_all()
    app._pool = None
    with contextlib.suppress(AttributeError, KeyError):
        app.__dict__["amqp"]._producer_pool = None
    with contextlib.suppress(Exception):
        kombu.pools.reset()


def outbox_relay(*, batch: int = 500) -> int:
    """Publish what the on-commit hooks could not; returns how many were published."""
    stale = OutboxMessage.objects.filter(created_at__lt=now() - relay_after()).order_by("pk")
    published = 0
    for message in stale[:batch]:
        if not _publish(message):
            break  # the broker is still away; the next run tries again
        published += 1
    return published

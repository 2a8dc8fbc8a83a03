"""Tasks enqueued after commit, without trusting the broker to be there (issue: broker outages).

`enqueue_on_commit("labgpu.provisioning.tasks.provision_node", node.pk)` writes an outbox row in
the caller's transaction. After commit the row is published and deleted; if the broker is away
(Redis down, a closed connection pool, a timeout), publishing fails quietly, the request answers
normally, and `outbox_relay` (beat) publishes the row once the broker is back. The row and the
work it asks for commit together, so the work is never lost; a row may be published twice (a crash
between publish and delete), which is fine because every task is idempotent.
"""

import contextlib
import logging
from datetime import timedelta
from typing import Any

import kombu.pools
from celery import current_app
from django.db import transaction

from labgpu.core.crashpoints import crash_point
from labgpu.core.models import OutboxMessage
from labgpu.core.timeutils import now

logger = logging.getLogger(__name__)
# A fresh row is the on-commit hook's to publish; the relay waits this long so both rarely race.
RELAY_AFTER = timedelta(seconds=5)
# Publishing must not hold a request up while the broker is away: one quick try, then the relay.
PUBLISH_RETRY_POLICY = {"max_retries": 0}


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
        current_app.send_task(task, args=list(args), retry=False, retry_policy=PUBLISH_RETRY_POLICY)
    except Exception as error:
        logger.warning("could not publish %s%s (the sweep will): %r", task, args, error)
        reset_broker_connections()
        return False
    return True


def _publish(message: OutboxMessage) -> bool:
    crash_point("outbox.before_publish")
    countdown = max(0.0, (message.not_before - now()).total_seconds())
    try:
        current_app.send_task(
            message.task,
            args=message.args,
            countdown=countdown or None,
            retry=False,
            retry_policy=PUBLISH_RETRY_POLICY,
        )
    except Exception as error:  # any broker failure: the relay publishes it later
        logger.warning("outbox: could not publish %s%s: %r", message.task, message.args, error)
        reset_broker_connections()
        return False
    OutboxMessage.objects.filter(pk=message.pk).delete()
    return True


def reset_broker_connections() -> None:
    """Drop the process's broker connection and producer pools after a failure. A pool that was
    closed (by a reconfiguration, or a connection error mid-acquire) answers every later publish
    with "Acquire on closed pool", even once the broker is back; fresh pools reconnect. kombu
    keeps its pools in process-wide groups keyed by broker URL, so those are reset too."""
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
    stale = OutboxMessage.objects.filter(created_at__lt=now() - RELAY_AFTER).order_by("pk")
    published = 0
    for message in stale[:batch]:
        if not _publish(message):
            break  # the broker is still away; the next run tries again
        published += 1
    return published

"""Thin periodic tasks of the bookings app (the lifecycle's live in provisioning/tasks.py)."""

from celery import shared_task

from labgpu.bookings.services import idempotency_keys_purge


@shared_task(acks_late=True)
def purge_idempotency_keys() -> int:
    return idempotency_keys_purge()

from celery import shared_task

from labgpu.core.outbox import outbox_relay


@shared_task(acks_late=True)
def relay_outbox() -> int:
    """Publish tasks whose on-commit publish met an absent broker."""
    return outbox_relay()

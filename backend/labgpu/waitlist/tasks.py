"""Thin tasks: ids in, a service call, safe to run twice or to be killed midway (the promotion
and the expiry lock and re-read their rows; the sweep re-drives what a lost task left)."""

from celery import shared_task

from labgpu.waitlist import services


@shared_task(acks_late=True)
def promote_waitlist(pool_id: int) -> list[int]:
    return services.waitlist_promote(pool_id=pool_id)


@shared_task(acks_late=True)
def expire_offer(entry_id: int) -> bool:
    return services.waitlist_offer_expire(entry_id=entry_id)


@shared_task(acks_late=True)
def sweep_waitlist() -> dict[str, int]:
    return services.waitlist_sweep()

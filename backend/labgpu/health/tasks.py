from celery import shared_task

from labgpu.health import utilisation


@shared_task(acks_late=True)
def reclaim_idle_bookings() -> dict[str, int]:
    """Beat: warn owners of idle bookings and end those idle past the grace (idempotent)."""
    return utilisation.bookings_reclaim_idle()

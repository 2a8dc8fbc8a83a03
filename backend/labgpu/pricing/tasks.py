from celery import shared_task

from labgpu.pricing import services


@shared_task(acks_late=True)
def sync_prices() -> dict:
    """Beat: read the providers' price lists; safe to run twice (an unchanged price writes
    nothing)."""
    result = services.prices_sync()
    return {"changed": len(result.changed), "errors": result.errors}

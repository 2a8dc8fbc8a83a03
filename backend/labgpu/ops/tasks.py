from celery import shared_task

from labgpu.ops.metrics import state_gauges_refresh


@shared_task(acks_late=True, ignore_result=True)
def refresh_state_gauges() -> None:
    """Count bookings and nodes for /metrics (labgpu.ops.metrics.StateGaugesCollector)."""
    state_gauges_refresh()

from celery import shared_task

from labgpu.statements import services


@shared_task(acks_late=True)
def send_statements() -> int:
    """Beat, hourly: last month's statements not yet sent (each lab-month once)."""
    return services.statements_send_due()

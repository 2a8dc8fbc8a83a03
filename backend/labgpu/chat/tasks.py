from celery import shared_task

from labgpu.chat import services


@shared_task(bind=True, acks_late=True, max_retries=None)
def deliver_chat_message(self, delivery_id: int) -> None:  # type: ignore[no-untyped-def]
    """Send one chat delivery; the service counts attempts and says when to try again
    (exponential back-off up to LABGPU_CHAT_MAX_ATTEMPTS)."""
    delay = services.delivery_attempt(delivery_id=delivery_id)
    if delay is not None:
        raise self.retry(countdown=delay)


@shared_task(acks_late=True)
def redrive_chat_deliveries() -> int:
    """Beat: deliveries whose retry was lost get their task again."""
    return services.deliveries_redrive()

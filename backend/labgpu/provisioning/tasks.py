"""Thin tasks: ids in, a service call, safe to run twice, to retry, or to be killed midway
(acks_late + reject_on_worker_lost redeliver it; reconciliation re-drives what is left stuck)."""

from celery import shared_task

from labgpu.bookings.services import bookings_expire_stale_pending
from labgpu.catalog.models import ProviderAccount
from labgpu.providers import ProviderTransientError
from labgpu.provisioning import services

RETRY = {
    "acks_late": True,
    "autoretry_for": (ProviderTransientError, services.NodeStillExists, services.NodeBusy),
    "retry_backoff": 2,
    "retry_backoff_max": 120,
    "retry_jitter": True,
    "max_retries": 12,
}


@shared_task(**RETRY)
def provision_node(node_id: int) -> None:
    services.node_provision(node_id=node_id)


@shared_task(**RETRY)
def poll_node(node_id: int) -> None:
    from django.conf import settings

    if services.node_poll(node_id=node_id):
        poll_node.apply_async(args=[node_id], countdown=settings.LABGPU_POLL_INTERVAL_S)


@shared_task(**RETRY)
def teardown_node(node_id: int) -> None:
    services.node_teardown(node_id=node_id)


@shared_task(acks_late=True)
def start_due_bookings() -> int:
    return services.bookings_start_due()


@shared_task(acks_late=True)
def end_due_bookings() -> int:
    ended = services.bookings_end_due()
    services.bookings_wind_down()
    return ended


@shared_task(acks_late=True)
def expire_stale_pending() -> int:
    return bookings_expire_stale_pending()


@shared_task(acks_late=True)
def remind_ending_bookings() -> int:
    return services.bookings_remind_ending()


@shared_task(acks_late=True)
def fail_silent_nodes() -> int:
    return services.nodes_fail_silent()


@shared_task(**RETRY)
def reconcile(account_id: int) -> dict[str, int]:
    return services.reconcile(account_id=account_id)


@shared_task(acks_late=True)
def reconcile_all() -> int:
    accounts = [a for a in ProviderAccount.objects.filter(is_active=True) if a.usable]
    for account in accounts:
        reconcile.delay(account.pk)
    return len(accounts)

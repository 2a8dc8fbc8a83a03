"""Thin tasks: ids in, a service call, safe to run twice, to retry, or to be killed midway
(acks_late + reject_on_worker_lost redeliver it; reconciliation re-drives what is left stuck)."""

from celery import Task, shared_task
from django.conf import settings

from labgpu.bookings.services import bookings_expire_stale_pending
from labgpu.catalog.models import ProviderAccount
from labgpu.providers import ProviderTransientError, retry_countdown
from labgpu.provisioning.dispatch import step_due
from labgpu.provisioning.models import Node
from labgpu.provisioning.services import nodes, reconciliation, sweeps, volume_changes, volumes

RETRY = {
    "acks_late": True,
    "bind": True,
    "max_retries": 12,
}
BACKOFF_MAX_S = 120


def _retry(task: Task, error: Exception, *, node_id: int | None = None) -> None:
    """Retry on the provider's own schedule when it gave one (`ratelimit-reset`), soon after a
    lease that is about to lapse, and with exponential backoff otherwise. A node step's retry
    marks when it is due, so the orphan sweep knows a held retry from one lost with its worker."""
    if isinstance(error, nodes.NodeBusy):
        countdown: float = settings.LABGPU_PROVIDER_LEASE_S / 3
    else:
        backoff = min(BACKOFF_MAX_S, 2 ** (task.request.retries + 1)) * settings.TIME_SCALE
        countdown = retry_countdown(error, backoff, minimum=settings.LABGPU_RETRY_MIN_S)
    if node_id is not None:
        step_due(node_id, countdown=countdown)
    raise task.retry(exc=error, countdown=countdown)


RETRYABLE = (ProviderTransientError, nodes.NodeStillExists, nodes.NodeBusy)


@shared_task(**RETRY)
def provision_node(self: Task, node_id: int) -> None:
    try:
        nodes.node_provision(node_id=node_id)
    except RETRYABLE as error:
        _retry(self, error, node_id=node_id)


@shared_task(**RETRY)
def teardown_node(self: Task, node_id: int) -> None:
    try:
        nodes.node_teardown(node_id=node_id)
    except RETRYABLE as error:
        _retry(self, error, node_id=node_id)


@shared_task(**RETRY)
def poll_account(self: Task, account_id: int) -> int:
    try:
        return nodes.nodes_poll(account_id=account_id)
    except RETRYABLE as error:
        _retry(self, error)
        raise  # unreachable: retry raises


@shared_task(acks_late=True)
def poll_nodes() -> int:
    """Beat: one listing per provider account with nodes waiting on their droplets."""
    accounts = nodes.accounts_to_poll()
    for account_id in accounts:
        poll_account.delay(account_id)
    return len(accounts)


@shared_task(acks_late=True)
def poll_node(node_id: int) -> None:
    """Kept for messages queued before polling went per account: polls the node's account."""
    account_id = Node.objects.filter(pk=node_id).values_list("provider_account_id", flat=True)
    for pk in account_id:
        poll_account.delay(pk)


@shared_task(acks_late=True)
def start_booking(booking_id: int) -> bool:
    """A booking due now starts at once instead of waiting for the sweep."""
    return sweeps.booking_start(booking_id=booking_id)


@shared_task(acks_late=True)
def wind_down_booking(booking_id: int) -> None:
    """A booking ended early: tear its node down at once instead of at the next sweep."""
    sweeps.booking_wind_down(booking_id=booking_id)


@shared_task(acks_late=True)
def check_capacity_ahead() -> int:
    """Beat: warn about bookings whose size shows no capacity in any of their pool's regions."""
    return sweeps.bookings_check_capacity_ahead()


@shared_task(acks_late=True)
def start_due_bookings() -> int:
    return sweeps.bookings_start_due()


@shared_task(acks_late=True)
def end_due_bookings() -> int:
    ended = sweeps.bookings_end_due()
    sweeps.bookings_wind_down()
    return ended


@shared_task(acks_late=True)
def expire_stale_pending() -> int:
    return bookings_expire_stale_pending()


@shared_task(acks_late=True)
def remind_ending_bookings() -> int:
    return sweeps.bookings_remind_ending()


@shared_task(acks_late=True)
def redrive_orphaned_steps() -> int:
    """Beat, every few seconds: provision and teardown steps a dead worker held."""
    return reconciliation.nodes_redrive_orphaned()


@shared_task(acks_late=True)
def fail_silent_nodes() -> int:
    return reconciliation.nodes_fail_silent()


@shared_task(**RETRY)
def reconcile(self: Task, account_id: int) -> dict[str, int]:
    retrying = False
    try:
        return reconciliation.reconcile(account_id=account_id)
    except RETRYABLE as error:
        retrying = self.request.retries < self.max_retries  # keeps the account's claim
        _retry(self, error)
        raise
    finally:
        if not retrying:
            reconciliation.reconcile_release(account_id)


@shared_task(acks_late=True)
def reconcile_all() -> int:
    """Beat: enqueue a reconcile for each usable account that has none in flight."""
    accounts = [a for a in ProviderAccount.objects.filter(is_active=True) if a.usable]
    claimed = [a.pk for a in accounts if reconciliation.reconcile_claim(a.pk)]
    for account_id in claimed:
        reconcile.delay(account_id)
    return len(claimed)


@shared_task(acks_late=True)
def meter_volumes() -> int:
    """Beat: meter persistent volumes' storage (GB-months) up to now; safe to run twice."""
    return volumes.volumes_meter()


@shared_task(**RETRY)
def create_volume(self: Task, volume_id: int) -> None:
    """A researcher's new volume, made at the provider (adopted by name on a retry)."""
    try:
        volume_changes.volume_provision(volume_id=volume_id)
    except RETRYABLE as error:
        _retry(self, error)


@shared_task(**RETRY)
def resize_volume(self: Task, volume_id: int) -> None:
    """A researcher's grow, asked of the provider once (a retry reads the provider's size)."""
    try:
        volume_changes.volume_resize_apply(volume_id=volume_id)
    except RETRYABLE as error:
        _retry(self, error)

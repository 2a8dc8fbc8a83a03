"""Reconciliation: make the provider's droplets and our nodes agree (I-3), keep the ledger
complete (I-8), fail silent nodes and re-drive work a killed worker left behind."""

import logging
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import models
from django.db.models import Q

from labgpu.catalog.models import ProviderAccount
from labgpu.core.crashpoints import crash_point
from labgpu.core.reasons import reason as stored_reason
from labgpu.core.timeutils import now
from labgpu.providers import (
    Droplet,
    ProviderNotFound,
)
from labgpu.provisioning.dispatch import redrive
from labgpu.provisioning.drivers import driver_for
from labgpu.provisioning.models import Node
from labgpu.provisioning.services.nodes import (
    ALIVE_AFTER_CREATE,
    node_destroy_stray,
    node_fail,
    node_meter,
    node_record_droplet,
)
from labgpu.provisioning.services.volumes import volumes_reconcile

logger = logging.getLogger(__name__)
NodeStatus = Node.Status


def nodes_fail_silent(*, batch: int = 100) -> int:
    """Fail nodes whose droplet is up but whose agent never reported (or stopped reporting)."""
    cutoff = now() - timedelta(seconds=settings.LABGPU_AGENT_REPORT_TIMEOUT_S)
    silent = Node.objects.filter(
        status__in=[NodeStatus.BOOTING, NodeStatus.CHECKING], status_changed_at__lt=cutoff
    ).values_list("pk", flat=True)[:batch]
    return sum(
        node_fail(
            node_id=pk,
            reason=stored_reason("The node agent never reported; the node was replaced."),
        )
        for pk in silent
    )


def _claim_s() -> int:
    """How long one account's reconcile counts as in flight when nothing releases it (a killed
    worker): five reconcile periods."""
    return max(1, round(300 * settings.TIME_SCALE))


def _claim_key(account_id: int) -> str:
    return f"labgpu:reconcile:{account_id}"


def reconcile_claim(account_id: int) -> bool:
    """One reconcile per account in flight. Under a provider rate limit a reconcile retries on
    the provider's schedule; without this the beat would stack a new one every minute, and the
    pile of sweeps would spend the request budget that creates and teardowns need."""
    try:
        return cache.add(_claim_key(account_id), 1, timeout=_claim_s())
    except Exception:  # the cache is away: reconcile anyway, it is idempotent
        return True


def reconcile_release(account_id: int) -> None:
    try:
        cache.delete(_claim_key(account_id))
    except Exception:  # the claim lapses on its own
        logger.warning("reconcile: could not release the claim of account %s", account_id)


def reconcile(*, account_id: int) -> dict[str, int]:
    """Make the provider's droplets and our nodes agree (I-3), and the ledger complete (I-8).

    - a droplet with our tag whose node is gone, destroyed, or points at another droplet: destroy
      it and meter it (to us, not the lab);
    - a live node that never recorded its droplet (a create whose answer was lost): adopt it;
    - a live node whose droplet is missing from the listing and confirmed gone: fail it (lost);
    - a destroyed node with a droplet but no usage record: write the record;
    - work a crashed worker left half-done (stuck creates, teardowns): enqueue it again.
    """
    account = ProviderAccount.objects.get(pk=account_id)
    summary = {
        "orphans_destroyed": 0,
        "nodes_lost": 0,
        "adopted": 0,
        "metered": 0,
        "requeued": 0,
        "volumes_untracked": 0,
    }
    with driver_for(account) as driver:
        droplets = driver.list_ours()
        crash_point("reconcile.after_list")
        by_node: dict[int, list[Droplet]] = {}
        for droplet in droplets:
            if droplet.node_id is not None:
                by_node.setdefault(droplet.node_id, []).append(droplet)
        nodes = {
            node.pk: node
            for node in Node.objects.filter(provider_account=account, pk__in=list(by_node))
        }
        for node_id, node_droplets in by_node.items():
            node = nodes.get(node_id)
            for droplet in sorted(node_droplets, key=lambda d: d.id):
                unrecorded = node is not None and not node.provider_id
                if unrecorded and node_record_droplet(
                    node.pk, droplet, statuses=ALIVE_AFTER_CREATE
                ):
                    summary["adopted"] += 1
                    node.refresh_from_db()
                    continue
                orphan = (
                    node is None
                    or node.status == NodeStatus.DESTROYED
                    or (node.provider_id != "" and node.provider_id != str(droplet.id))
                )
                if not orphan:
                    continue
                logger.warning(
                    "reconcile: destroying orphan droplet %s (node %s)", droplet.id, node_id
                )
                if node is None:
                    driver.destroy(droplet.id)  # not made by this installation: nothing to bill
                else:
                    node_destroy_stray(node=node, droplet=droplet)
                summary["orphans_destroyed"] += 1

        listed = {str(droplet.id) for droplet in droplets}
        watched = Node.objects.filter(
            provider_account=account,
            status__in=[NodeStatus.BOOTING, NodeStatus.CHECKING, NodeStatus.READY],
        ).exclude(provider_id="")
        for node in watched:
            if node.provider_id in listed:
                continue
            try:
                driver.get(int(node.provider_id))
            except ProviderNotFound:
                summary["nodes_lost"] += node_fail(
                    node_id=node.pk, reason=stored_reason("The droplet vanished at the provider.")
                )
        summary["volumes_untracked"] = volumes_reconcile(account=account, driver=driver)
    summary["metered"] = _meter_unmetered(account=account)
    summary["requeued"] = nodes_redrive_orphaned(account=account)
    return summary


def _meter_unmetered(*, account: ProviderAccount) -> int:
    """The ledger's backstop: every destroyed droplet of ours has its usage record (I-8)."""
    unmetered = (
        Node.objects.filter(provider_account=account, status=NodeStatus.DESTROYED)
        .exclude(provider_id="")
        .exclude(usage_records__droplet_id=models.F("provider_id"))
    )
    return sum(node_meter(node=node) is not None for node in unmetered[:200])


def nodes_redrive_orphaned(*, account: ProviderAccount | None = None, batch: int = 200) -> int:
    """Provision and teardown steps that no live worker holds: the node's lease is free and its
    step is overdue (Node.step_due_by), so the worker that had it died, mid-step or holding its
    retry. Run every few seconds, so another worker takes it over within LABGPU_PROVIDER_LEASE_S
    plus the sweep's period, not the broker's visibility timeout. The steps are idempotent and
    take the lease, so a step that was only slow in the queue runs twice harmlessly."""
    moment = now()
    nodes = Node.objects.filter(
        Q(lease_until__isnull=True) | Q(lease_until__lt=moment),
        Q(step_due_by__isnull=True) | Q(step_due_by__lt=moment),
    )
    if account is not None:
        nodes = nodes.filter(provider_account=account)
    creates = nodes.filter(
        Q(status=NodeStatus.REQUESTED)
        | Q(status=NodeStatus.CREATING, provider_id="")
        | Q(status__in=ALIVE_AFTER_CREATE, provider_id="")
    ).values_list("pk", flat=True)
    teardowns = nodes.filter(
        status__in=[NodeStatus.DRAINING, NodeStatus.DESTROYING, NodeStatus.FAILED]
    ).values_list("pk", flat=True)
    redriven = 0
    for task, node_ids in (("provision_node", creates), ("teardown_node", teardowns)):
        for node_id in node_ids[:batch]:
            logger.info("node %s: its %s step has no live worker; running it again", node_id, task)
            redrive(task, node_id)  # type: ignore[arg-type]
            redriven += 1
    return redriven

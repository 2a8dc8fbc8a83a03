"""Reconciliation at the service level, against the in-memory provider (labgpu.providers.fake):
quick checks of I-3 and I-8 that the emulator tests (test_lifecycle.py, test_crash_anywhere.py)
repeat end to end. What the provider still holds is read from the fake's own droplet table."""

from contextlib import nullcontext
from datetime import timedelta

import pytest

from labgpu.core.timeutils import now
from labgpu.providers import DropletSpec
from labgpu.providers.fake import FakeDriver
from labgpu.provisioning.models import Node
from labgpu.provisioning.services import nodes, reconciliation
from labgpu.provisioning.tests.factories import NodeFactory
from labgpu.usage.models import UsageRecord

pytestmark = pytest.mark.django_db


@pytest.fixture
def provider(monkeypatch):
    driver = FakeDriver()
    for module in (nodes, reconciliation):
        monkeypatch.setattr(module, "driver_for", lambda account: nullcontext(driver))
    return driver


def create_droplet(provider: FakeDriver, node_id: int):
    spec = DropletSpec(node_id=node_id, region="tor1", size="gpu-mi300x1-192gb", image="img")
    return provider.create(spec)


def test_I3_reconcile_destroys_every_tagged_droplet_no_live_node_owns(provider):
    live = NodeFactory(status=Node.Status.READY)
    kept = create_droplet(provider, live.pk)
    Node.objects.filter(pk=live.pk).update(provider_id=str(kept.id))
    second = create_droplet(provider, live.pk)  # a second droplet for a node that has one
    gone = NodeFactory(
        status=Node.Status.DESTROYED,
        provider_account=live.provider_account,
        destroyed_at=now() - timedelta(minutes=5),
    )
    left_behind = create_droplet(provider, gone.pk)
    unknown = create_droplet(provider, 987_654)  # no such node: not made by this installation

    summary = reconciliation.reconcile(account_id=live.provider_account_id)

    assert set(provider.droplets) == {kept.id}
    assert summary["orphans_destroyed"] == 3
    assert ("destroy", unknown.id) in provider.calls
    live.refresh_from_db()
    assert live.status == Node.Status.READY and live.provider_id == str(kept.id)
    # Strays we made are on the ledger at our cost; the unknown droplet is not ours to bill.
    records = UsageRecord.objects.values_list("droplet_id", "charged_to_lab")
    assert sorted(records) == sorted([(str(second.id), False), (str(left_behind.id), False)])


def test_I8_reconcile_writes_the_missing_usage_record_of_a_destroyed_droplet(provider):
    created = now() - timedelta(hours=2)
    node = NodeFactory(
        status=Node.Status.DESTROYED,
        provider_id="4242",
        provider_created_at=created,
        ready_at=created + timedelta(minutes=3),
        destroyed_at=created + timedelta(hours=1),
    )

    reconciliation.reconcile(account_id=node.provider_account_id)
    reconciliation.reconcile(account_id=node.provider_account_id)  # twice: still one record

    record = UsageRecord.objects.get()
    assert (record.droplet_id, record.node_id, record.seconds) == ("4242", node.pk, 3600)
    assert record.charged_to_lab  # handed over healthy and never failed


def test_one_reconcile_per_account_is_in_flight(provider, monkeypatch):
    """A rate-limited reconcile retries on the provider's schedule; the beat must not stack new
    ones on it (a pile of sweeps spent the budget a create and a teardown needed)."""
    from labgpu.provisioning import tasks

    monkeypatch.setenv("LABGPU_PROVIDER_TOKEN_EMULATOR", "a-token")
    account = NodeFactory().provider_account
    sent = []
    monkeypatch.setattr(tasks.reconcile, "delay", sent.append)
    reconciliation.reconcile_release(account.pk)
    try:
        assert tasks.reconcile_all() == 1
        assert tasks.reconcile_all() == 0  # the first is still queued or retrying
        assert sent == [account.pk]

        tasks.reconcile(account.pk)  # it ran to the end: the next beat enqueues again
        assert tasks.reconcile_all() == 1
        assert sent == [account.pk, account.pk]
    finally:
        reconciliation.reconcile_release(account.pk)

"""Migration 0011 (one Volume row per provider volume) on a database that already holds several.

The tests run 0011's own step (its merge, then its constraint) over today's table with the rule
lifted: the schema gains columns with every release (0015 added a pool to volumes, 0012-0014
columns to nodes), so going back to 0010 and writing today's models broke twice. The merge reads
the volume and storage tables through the app registry the migration is given, here today's.
"""

import importlib
import logging
from datetime import timedelta
from decimal import Decimal

import pytest
from django.apps import apps as today
from django.db import connection

from labgpu.catalog.tests.factories import ProviderAccountFactory
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Volume
from labgpu.provisioning.tests.factories import NodeFactory
from labgpu.usage.models import StorageUsage

MIGRATION = importlib.import_module("labgpu.provisioning.migrations.0011_volume_unique_provider_id")
RULE = next(c for c in Volume._meta.constraints if c.name == "volume_unique_provider_id")


def migrate() -> None:
    """0011's operations: merge the rows, then add the rule (which refuses duplicates left)."""
    with connection.schema_editor() as editor:
        MIGRATION.merge_duplicate_volumes(today, editor)
        editor.add_constraint(Volume, RULE)


@pytest.fixture
def at_0010(transactional_db):
    """The volume table without 0011's rule, with a provider account and two of its nodes."""
    account = ProviderAccountFactory()
    nodes = [NodeFactory(provider_account=account) for _ in range(2)]
    with connection.schema_editor() as editor:
        editor.remove_constraint(Volume, RULE)
    yield account, nodes
    StorageUsage.objects.all().delete()
    Volume.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_class WHERE relname = %s", [RULE.name])
        present = cursor.fetchone()
    if not present:
        with connection.schema_editor() as editor:
            editor.add_constraint(Volume, RULE)


def volume(owner, name: str, *, account, provider_id: str, age_days: int, **fields) -> Volume:
    row = Volume.objects.create(
        owner_user=owner,
        provider_account=account,
        region="tor1",
        name=name,
        size_gb=100,
        provider_id=provider_id,
        state=fields.pop("state", "available"),
        **fields,
    )
    Volume.objects.filter(pk=row.pk).update(created_at=now() - timedelta(days=age_days))
    return row


def metered(row: Volume, lab, *, days_ago: int, days: int) -> StorageUsage:
    start = now().replace(microsecond=0) - timedelta(days=days_ago)
    return StorageUsage.objects.create(
        volume=row,
        lab=lab,
        region="tor1",
        size_gb=100,
        started_at=start,
        ended_at=start + timedelta(days=days),
        gb_months=Decimal("3.3"),
        cost=Decimal("0.33"),
    )


def test_0011_merges_rows_of_one_provider_volume_keeping_the_one_in_use(
    at_0010, alice, bob, vision_lab, caplog
):
    account, (node, _) = at_0010
    # vol-1: an old deleted row metered before the others existed (and then along with them), the
    # row a running node has attached, and a newer idle row that no one uses.
    old = volume(
        alice, "labgpu-u1-tor1", account=account, provider_id="vol-1", age_days=40, state="deleted"
    )
    used = volume(
        alice,
        "labgpu-u1-tor1",
        account=account,
        provider_id="vol-1",
        age_days=20,
        state="attached",
        attached_node=node,
    )
    newer = volume(alice, "labgpu-u1b-tor1", account=account, provider_id="vol-1", age_days=5)
    before_used = metered(old, vision_lab, days_ago=40, days=20)  # before `used` existed
    twice = metered(old, vision_lab, days_ago=20, days=10)  # the same disk metered twice
    own = metered(used, vision_lab, days_ago=20, days=10)
    # vol-2: two idle rows; the newest stays.
    stale = volume(bob, "labgpu-u2-tor1", account=account, provider_id="vol-2", age_days=9)
    fresh = volume(bob, "labgpu-u2b-tor1", account=account, provider_id="vol-2", age_days=1)
    # Not duplicates: rows with no provider id yet, and the same id on another account.
    waiting = [
        volume(alice, f"labgpu-w{n}-tor1", account=account, provider_id="", age_days=1)
        for n in range(2)
    ]
    elsewhere = volume(
        bob,
        "labgpu-u2-tor1",
        account=ProviderAccountFactory(name="DO"),
        provider_id="vol-1",
        age_days=3,
    )

    with caplog.at_level(logging.WARNING, logger="labgpu.provisioning"):
        migrate()

    # The row in use keeps the disk (not the newest: a booking holds it) with its node.
    used.refresh_from_db()
    assert (used.provider_id, used.state, used.attached_node_id) == ("vol-1", "attached", node.pk)
    assert not Volume.objects.filter(pk=newer.pk).exists()
    # The disk's earlier metering moves to it; the period metered twice stays on the old row,
    # which keeps no provider id (nothing bills it again, nothing of its history is lost).
    assert set(StorageUsage.objects.filter(volume=used).values_list("pk", flat=True)) == {
        own.pk,
        before_used.pk,
    }
    old.refresh_from_db()
    assert (old.provider_id, old.state) == ("", "deleted")
    assert list(StorageUsage.objects.filter(volume=old).values_list("pk", flat=True)) == [twice.pk]
    # With no one using either, the newest row stays.
    assert list(Volume.objects.filter(provider_id="vol-2").values_list("pk", flat=True)) == [
        fresh.pk
    ]
    assert not Volume.objects.filter(pk=stale.pk).exists()
    assert Volume.objects.filter(pk__in=[w.pk for w in waiting]).count() == 2
    assert Volume.objects.filter(pk=elsewhere.pk, provider_id="vol-1").exists()
    # What it merged is logged, by row.
    log = caplog.text
    assert f"#{newer.pk}" in log and f"#{old.pk}" in log and f"#{stale.pk}" in log
    assert "vol-1" in log and "vol-2" in log


def test_0011_refuses_to_choose_between_two_rows_each_attached_to_a_node(at_0010, alice):
    account, nodes = at_0010
    rows = [
        volume(
            alice,
            f"labgpu-u{n}-tor1",
            account=account,
            provider_id="vol-1",
            age_days=n + 1,
            state="attached",
            attached_node=nodes[n],
        )
        for n in range(2)
    ]
    with pytest.raises(RuntimeError, match="vol-1") as refused:
        migrate()
    assert all(f"#{row.pk}" in str(refused.value) for row in rows)
    assert Volume.objects.filter(provider_id="vol-1").count() == 2  # nothing was changed
    Volume.objects.filter(pk=rows[0].pk).delete()  # an admin's choice; then it migrates
    migrate()
    assert list(Volume.objects.filter(provider_id="vol-1").values_list("pk", flat=True)) == [
        rows[1].pk
    ]

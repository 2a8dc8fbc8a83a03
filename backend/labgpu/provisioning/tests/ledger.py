"""The checks every fault test ends with, made against the provider's own record (the emulator's
ledger of creates and deletes), never against numbers LabGPU computed itself (I-3, I-4, I-8)."""

from __future__ import annotations

import threading
from collections import Counter
from decimal import Decimal

from django.db import connection

from labgpu.bookings.models import Booking
from labgpu.health.models import HealthReport
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.harness import wait_for
from labgpu.usage.models import UsageRecord

# How long after the provider removed a droplet we may still be billing it (the promise; a
# droplet that vanished by itself is billed until the teardown's DELETE finds it gone).
BILLED_AFTER_GONE_S = 30.0
# DigitalOcean's created_at has whole seconds.
CREATED_AT_PRECISION_S = 1.0
# Our record of the accepted DELETE and the provider's differ by the request's round trip.
DELETE_PRECISION_S = 1.0


def our_ledger(emulator) -> list[dict]:
    return [e for e in emulator.ledger() if e["name"].startswith("labgpu-node-")]


def wait_no_droplets_left(emulator, timeout_s: float = 60) -> None:
    """I-3: nothing of ours is left running at the provider."""
    wait_for(
        lambda: all(e["gone_at"] is not None for e in our_ledger(emulator)),
        timeout_s=timeout_s,
        message="every droplet to be destroyed",
    )


def assert_ledger_exact(emulator, *, timeout_s: float = 60) -> list[dict]:
    """Every droplet the provider created for us has exactly one usage record, billed from its
    creation to its removal, charged to the lab only if its node was handed over healthy (I-8);
    no node attempt has two droplets (I-4); nothing is left running (I-3)."""
    wait_no_droplets_left(emulator, timeout_s=timeout_s)
    wait_for(
        lambda: UsageRecord.objects.count() >= len(our_ledger(emulator)),
        timeout_s=timeout_s,
        message="a usage record for every droplet",
    )
    ledger = our_ledger(emulator)
    duplicates = [name for name, n in Counter(e["name"] for e in ledger).items() if n > 1]
    assert not duplicates, f"node attempts with more than one droplet: {duplicates}"
    records = {r.droplet_id: r for r in UsageRecord.objects.select_related("node")}
    assert set(records) == {str(e["id"]) for e in ledger}, (records, ledger)
    for entry in ledger:
        record = records[str(entry["id"])]
        started = record.started_at.timestamp() - entry["created_at"]
        assert abs(started) <= CREATED_AT_PRECISION_S, (entry, record.started_at)
        late = record.ended_at.timestamp() - entry["gone_at"]
        assert late <= BILLED_AFTER_GONE_S, (entry, record.ended_at)
        if entry["delete_requested_at"] is not None:
            # Billing ends where the provider's does: at the DELETE it accepted, whatever
            # crashed between that answer and the confirmation (I-8).
            off = record.ended_at.timestamp() - entry["delete_requested_at"]
            assert abs(off) <= DELETE_PRECISION_S, (entry, record.ended_at)
        else:  # the droplet went by itself (vanished): billed until we noticed
            assert late >= -CREATED_AT_PRECISION_S, (entry, record.ended_at)
        node = record.node
        assert record.node.name == entry["name"]
        healthy = node.ready_at is not None and node.failed_at is None
        assert record.charged_to_lab == healthy, (entry, node.status, node.failure_reason)
    return ledger


def assert_booking_billed_from_ledger(booking_id: int, ledger: list[dict]) -> None:
    """The booking's consumed hours are the provider's lifetimes of its healthy nodes' droplets."""
    booking = Booking.objects.get(pk=booking_id)
    names = {
        n.name: n
        for n in Node.objects.filter(booking_id=booking_id)
        if n.ready_at and not n.failed_at
    }
    lifetimes = [e["gone_at"] - e["created_at"] for e in ledger if e["name"] in names]
    expected = Decimal(sum(lifetimes)) / 3600 * booking.gpu_count
    slack = Decimal(BILLED_AFTER_GONE_S + CREATED_AT_PRECISION_S) / 3600 * booking.gpu_count
    consumed = booking.consumed_gpu_hours or Decimal(0)
    assert abs(consumed - expected) <= slack * max(1, len(lifetimes)), (consumed, expected)
    if not lifetimes:
        assert consumed == 0 and (booking.actual_cost or 0) == 0


class ReadyWatcher:
    """Samples the database while a scenario runs: a booking is never `ready` without a ready
    node that has its droplet, its IP (SSH) and a passing report."""

    def __init__(self) -> None:
        self.violations: list[str] = []
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ReadyWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        try:
            while not self._stop.wait(0.1):
                self._sample()
        finally:
            connection.close()

    def _sample(self) -> None:
        self.samples += 1
        for booking in Booking.objects.filter(status="ready"):
            node = booking.nodes.filter(status="ready").first()
            if node is None:
                self.violations.append(f"booking {booking.pk} ready without a ready node")
            elif not (node.provider_id and node.public_ip and node.ssh_command):
                self.violations.append(f"booking {booking.pk} ready, node {node.pk} unusable")
            elif not HealthReport.objects.filter(
                node=node, verdict__in=HealthReport.PASSING
            ).exists():
                self.violations.append(f"booking {booking.pk} ready without a passing report")

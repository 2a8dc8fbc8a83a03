"""Stock-outs (issue loop-truth item 5), against the emulator's stock per region × size: a pool
falls back to its other regions in order; with none in stock the booking waits until its start +
the grace period, then fails with the reason, frees its slot and charges nothing; ahead of the
start the user and the lab's admins are warned once when no region shows the size."""

from datetime import timedelta

import pytest
from django.core import mail

from labgpu.bookings.models import Booking
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.services.sweeps import bookings_check_capacity_ahead
from labgpu.provisioning.tests.harness import TIME_SCALE, scaled_bound, wait_for
from labgpu.provisioning.tests.ledger import (
    assert_booking_billed_from_ledger,
    assert_ledger_exact,
    our_ledger,
)
from labgpu.provisioning.tests.test_crash_anywhere import finish
from labgpu.provisioning.tests.test_lifecycle import create_booking, wait_status
from labgpu.usage.models import UsageRecord

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
SIZE = "gpu-mi300x1-192gb"


def test_a_region_out_of_stock_falls_back_to_the_next_listed_region(lifecycle, alice):
    lifecycle.pool.fallback_regions = ["nyc2", "atl1"]
    lifecycle.pool.save(update_fields=["fallback_regions"])
    lifecycle.emulator.set_stock(SIZE, "tor1", 0)
    lifecycle.emulator.set_stock(SIZE, "nyc2", 0)
    lifecycle.start_worker()
    booking_id = create_booking(alice, lifecycle.pool)
    wait_status(lifecycle, booking_id, "ready")
    node = Node.objects.get(booking_id=booking_id)
    assert node.region == "atl1"
    assert [e["region"] for e in our_ledger(lifecycle.emulator)] == ["atl1"]
    finish(lifecycle, alice, booking_id)
    ledger = assert_ledger_exact(lifecycle.emulator)
    assert_booking_billed_from_ledger(booking_id, ledger)


def test_stock_that_returns_within_the_grace_period_still_serves_the_booking(lifecycle, alice):
    lifecycle.emulator.set_stock(SIZE, "tor1", 0)
    lifecycle.start_worker(
        LABGPU_STOCKOUT_GRACE_S=str(600 / TIME_SCALE), LABGPU_STOCKOUT_RETRY_S=str(1 / TIME_SCALE)
    )
    booking_id = create_booking(alice, lifecycle.pool)
    wait_for(
        lambda: lifecycle.emulator.state()["counters"]["by_status"].get("422", 0) >= 2,
        timeout_s=60,
        message="creates refused for lack of stock",
    )
    assert not our_ledger(lifecycle.emulator)
    assert Booking.objects.get(pk=booking_id).status == "provisioning"
    lifecycle.emulator.set_stock(SIZE, "tor1", 1)
    wait_status(lifecycle, booking_id, "ready", timeout_s=120)
    finish(lifecycle, alice, booking_id)
    assert len(assert_ledger_exact(lifecycle.emulator)) == 1


def test_no_region_with_capacity_by_the_grace_fails_the_booking_and_charges_nothing(
    lifecycle, alice
):
    lifecycle.pool.fallback_regions = ["atl1"]
    lifecycle.pool.save(update_fields=["fallback_regions"])
    lifecycle.emulator.set_stock(SIZE, "tor1", 0)
    lifecycle.emulator.set_stock(SIZE, "atl1", 0)
    lifecycle.start_worker(
        LABGPU_STOCKOUT_GRACE_S=str(3 / TIME_SCALE), LABGPU_STOCKOUT_RETRY_S=str(1 / TIME_SCALE)
    )
    booking_id = create_booking(alice, lifecycle.pool)
    booking = wait_status(lifecycle, booking_id, "failed", timeout_s=120)
    assert "No GPU capacity" in booking.failure_reason
    assert "tor1" in booking.failure_reason and "atl1" in booking.failure_reason
    assert Node.objects.filter(booking_id=booking_id).count() == 1  # no replacement attempted
    assert our_ledger(lifecycle.emulator) == []  # the provider never made a droplet
    assert not UsageRecord.objects.filter(booking_id=booking_id).exists()
    assert (booking.consumed_gpu_hours or 0) == 0 and (booking.actual_cost or 0) == 0
    # The e-mail leaves on the worker's commit, after the status the test saw: wait for it.
    wait_for(lambda: "No GPU capacity" in lifecycle.mails(), timeout_s=30, message="the e-mail")
    # Its slot is free again: the same window can be booked at once.
    again = create_booking(alice, lifecycle.pool)
    assert again != booking_id


def test_ahead_of_the_start_the_user_and_lab_admins_are_warned_once(
    lifecycle, alice, bob, vision_lab
):
    """The check reads the provider's own `GET /v2/sizes` (the emulator's stock)."""
    # An hour ahead in production time: inside the (scaled) two-hour preflight window.
    start = (now() + timedelta(seconds=scaled_bound(3600))).replace(second=0, microsecond=0)
    booking = BookingFactory(
        lab=vision_lab,
        user=alice,
        pool=lifecycle.pool,
        start=start,
        end=start + timedelta(hours=1),
        status="scheduled",
    )
    assert bookings_check_capacity_ahead() == 0  # in stock: nobody is bothered
    lifecycle.emulator.set_stock(SIZE, "tor1", 0)
    lifecycle.emulator.set_stock(SIZE, "atl1", 0)
    lifecycle.emulator.set_stock(SIZE, "nyc2", 0)
    mail.outbox = []
    assert bookings_check_capacity_ahead() == 1
    recipients = sorted(address for m in mail.outbox for address in m.to)
    assert recipients == sorted([alice.email, bob.email])
    assert "no GPU capacity" in mail.outbox[0].subject
    assert bookings_check_capacity_ahead() == 0  # once
    booking.refresh_from_db()
    assert booking.capacity_warned_at is not None

"""The waitlist under races: several frees, duplicate promotions and sweeps at once, over two pools
of one GPU model, each thread on its own database connection. The database has to hold the line:
each freed slot ends held by at most one offer, no entry holds two, and the first in line are the
ones offered (nobody skipped)."""

import threading
from datetime import timedelta
from itertools import pairwise

import pytest
from django.db import connection, transaction

from labgpu.accounts.tests.factories import MembershipFactory, UserFactory
from labgpu.bookings.models import Booking
from labgpu.bookings.selectors import peak_usage
from labgpu.bookings.services import booking_cancel, booking_create, booking_expire, booking_reject
from labgpu.bookings.services.snapshot import pool_lock
from labgpu.catalog.tests.factories import NodePoolFactory
from labgpu.core.testing import backend_pid, waits_on_a_lock
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.services.nodes import booking_complete_if_done, node_fail
from labgpu.provisioning.tests.factories import NodeFactory
from labgpu.waitlist import services
from labgpu.waitlist.models import WaitlistEntry

WAITERS = 7


def in_parallel(jobs) -> list[BaseException]:
    """Run every job at once (a barrier releases them together), each in a thread of its own with
    its own database connection; returns what they raised."""
    barrier = threading.Barrier(len(jobs))
    errors: list[BaseException] = []

    def run(job) -> None:
        try:
            barrier.wait()
            job()
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def assert_slots_held_once(pool) -> None:
    live = list(
        Booking.objects.filter(pool=pool, status__in=Booking.LIVE_STATUSES).values_list(
            "reserved_start", "reserved_end", "slot"
        )
    )
    if not live:
        return
    periods = [(start, end) for start, end, _ in live]
    assert peak_usage(periods, min(s for s, _ in periods), max(e for _, e in periods)) <= (
        pool.capacity
    )
    for slot in {slot for _, _, slot in live}:
        mine = sorted((s, e) for s, e, sl in live if sl == slot)
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in pairwise(mine))


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_parallel_frees_and_waiters_give_each_slot_one_offer_and_skip_nobody(
    instance_type, quotas, alice, vision_lab, tomorrow
):
    end = tomorrow + timedelta(hours=2)
    pools = [
        NodePoolFactory(instance_type=instance_type, capacity=2, max_days_ahead=60)
        for _ in range(2)
    ]
    held = [
        booking_create(user=alice, pool=pool, start=tomorrow, end=end)[0]
        for pool in pools
        for _ in range(pool.capacity)
    ]
    waiters = []
    for index in range(WAITERS):
        user = UserFactory(username=f"waiter{index}")
        MembershipFactory(user=user, lab=vision_lab)
        # Alternate: one waits for the GPU model (either pool), the next for the first pool.
        where = {"gpu_model": instance_type.gpu_model} if index % 2 == 0 else {"pool": pools[0]}
        waiters.append(
            services.waitlist_join(
                user=user, earliest_start=tomorrow, latest_end=end, duration_minutes=120, **where
            )
        )
    assert not WaitlistEntry.objects.exclude(status=WaitlistEntry.Status.WAITING).exists()

    def free(booking):
        def job():
            booking_cancel(actor=alice, booking=Booking.objects.get(pk=booking.pk))
            services.waitlist_promote(pool_id=booking.pool_id)  # what the worker then runs

        return job

    def promote(pool):
        return lambda: services.waitlist_promote(pool_id=pool.pk)

    jobs = [free(booking) for booking in held]
    jobs += [promote(pool) for pool in pools for _ in range(3)]  # redelivered, duplicated tasks
    jobs += [services.waitlist_sweep for _ in range(2)]
    errors = in_parallel(jobs)
    assert not errors, errors
    services.waitlist_sweep()  # whatever a promotion that ran before its free committed missed

    freed = sum(pool.capacity for pool in pools)
    entries = list(WaitlistEntry.objects.order_by("id"))
    offered = [e for e in entries if e.status == WaitlistEntry.Status.OFFERED]
    # Each freed slot went to one offer, and they went to the first in line: a pool entry may
    # only be offered in its pool, so nobody was passed over while a slot they could use is free.
    assert len(offered) == freed
    offers = list(Booking.objects.filter(status=Booking.Status.OFFERED))
    assert len(offers) == freed
    assert sorted(b.pk for b in offers) == sorted(e.booking_id for e in offered)
    assert len({b.user_id for b in offers}) == freed  # nobody holds two
    for entry in offered:
        booking = next(b for b in offers if b.pk == entry.booking_id)
        assert booking.user_id == entry.user_id
        assert entry.pool_id in (None, booking.pool_id)
    waiting = [e for e in entries if e.status == WaitlistEntry.Status.WAITING]
    assert len(offered) + len(waiting) == WAITERS
    for late in waiting:
        # A waiter still waiting may only be behind offers it could not have used.
        assert all(
            early.pk < late.pk or (late.pool_id and early.booking.pool_id != late.pool_id)
            for early in offered
        ), (late.pk, [(e.pk, e.booking.pool_id) for e in offered])
    for pool in pools:
        assert_slots_held_once(pool)


def _waits_for_pool_lock(pool, free) -> bool:
    """Whether `free` (run in a thread of its own) waits for a transaction that holds the pool's
    row lock, as a promotion does, by PostgreSQL's own record of its backend (pg_stat_activity);
    a `free` that finishes while the lock is held did not wait: the defect."""
    locked, release = threading.Event(), threading.Event()
    backend: list[int] = []
    outcome: dict[str, object] = {}

    def hold_pool_lock() -> None:
        try:
            with transaction.atomic():
                pool_lock(pool.pk)
                locked.set()
                release.wait(60)
        finally:
            connection.close()

    def run_free() -> None:
        try:
            backend.append(backend_pid())
            outcome["result"] = free()
        except BaseException as error:  # reported by the assertion below
            outcome["error"] = error
        finally:
            connection.close()

    holder = threading.Thread(target=hold_pool_lock)
    holder.start()
    assert locked.wait(60), "the pool lock was never taken"
    freeing = threading.Thread(target=run_free)
    freeing.start()

    def finished(step: float) -> bool:  # finished while the pool was locked: it did not wait
        freeing.join(step)
        return not freeing.is_alive()

    waiting = waits_on_a_lock(backend, finished)
    release.set()
    holder.join(60)
    freeing.join(60)
    assert "error" not in outcome, outcome
    return waiting


@pytest.mark.django_db(transaction=True)
def test_a_cancel_frees_its_slot_under_the_pool_lock_a_promotion_holds(
    instance_type, quotas, alice, tomorrow
):
    """A promotion holds the pool's lock while it walks the line: a slot freed meanwhile without
    that lock is seen taken by an earlier entry and free by a later one, which skips the first."""
    pool = NodePoolFactory(instance_type=instance_type, capacity=1, max_days_ahead=60)
    booking, _ = booking_create(
        user=alice, pool=pool, start=tomorrow, end=tomorrow + timedelta(hours=2)
    )

    def cancel():
        return booking_cancel(actor=alice, booking=Booking.objects.get(pk=booking.pk))

    assert _waits_for_pool_lock(pool, cancel), "booking_cancel freed the slot without the lock"
    assert Booking.objects.get(pk=booking.pk).status == Booking.Status.CANCELLED


@pytest.mark.django_db(transaction=True)
def test_a_released_offer_frees_its_slot_under_the_pool_lock(
    instance_type, quotas, alice, vision_lab, tomorrow
):
    pool = NodePoolFactory(instance_type=instance_type, capacity=1, max_days_ahead=60)
    held, _ = booking_create(
        user=alice, pool=pool, start=tomorrow, end=tomorrow + timedelta(hours=2)
    )
    waiter = UserFactory(username="waiter")
    MembershipFactory(user=waiter, lab=vision_lab)
    entry = services.waitlist_join(
        user=waiter,
        earliest_start=tomorrow,
        latest_end=tomorrow + timedelta(hours=2),
        duration_minutes=120,
        pool=pool,
    )
    booking_cancel(actor=alice, booking=held)  # offers the slot in its own transaction
    entry.refresh_from_db()
    assert entry.status == WaitlistEntry.Status.OFFERED

    def decline():
        return services.waitlist_offer_decline(
            actor=waiter, entry=WaitlistEntry.objects.get(pk=entry.pk)
        )

    assert _waits_for_pool_lock(pool, decline), "the declined offer freed its slot without the lock"
    assert Booking.objects.get(pk=entry.booking_id).status == Booking.Status.EXPIRED


@pytest.fixture
def one_slot(instance_type, quotas, alice, tomorrow):
    """alice's booking filling a one-node pool tomorrow, 2 hours."""
    pool = NodePoolFactory(instance_type=instance_type, capacity=1, max_days_ahead=60)
    booking, _ = booking_create(
        user=alice, pool=pool, start=tomorrow, end=tomorrow + timedelta(hours=2)
    )
    return pool, booking


@pytest.mark.django_db(transaction=True)
def test_a_rejection_frees_its_slot_under_the_pool_lock(one_slot, bob):
    pool, booking = one_slot
    Booking.objects.filter(pk=booking.pk).update(status=Booking.Status.PENDING)

    def reject():
        return booking_reject(
            actor=bob, booking=Booking.objects.get(pk=booking.pk), reason="not this week"
        )

    assert _waits_for_pool_lock(pool, reject), "the rejection freed the slot without the lock"
    assert Booking.objects.get(pk=booking.pk).status == Booking.Status.REJECTED


@pytest.mark.django_db(transaction=True)
def test_an_expiry_frees_its_slot_under_the_pool_lock(one_slot):
    pool, booking = one_slot
    Booking.objects.filter(pk=booking.pk).update(status=Booking.Status.PENDING)

    def expire():
        return booking_expire(booking_id=booking.pk)

    assert _waits_for_pool_lock(pool, expire), "the expiry freed the slot without the lock"
    assert Booking.objects.get(pk=booking.pk).status == Booking.Status.EXPIRED


@pytest.mark.django_db(transaction=True)
def test_a_failed_node_frees_its_bookings_slot_under_the_pool_lock(one_slot):
    pool, booking = one_slot
    Booking.objects.filter(pk=booking.pk).update(status=Booking.Status.READY)
    node = NodeFactory(booking=booking, status=Node.Status.READY)

    def fail():
        return node_fail(node_id=node.pk, reason="gpu lost", replace=False)

    assert _waits_for_pool_lock(pool, fail), "the failure freed the slot without the lock"
    assert Booking.objects.get(pk=booking.pk).status == Booking.Status.FAILED


@pytest.mark.django_db(transaction=True)
def test_an_early_ends_completion_frees_the_rest_under_the_pool_lock(one_slot):
    # Before the explicit lock this already waited, by accident: updating the booking's row a
    # second time in one transaction makes PostgreSQL check its pool foreign key at COMMIT
    # (FOR KEY SHARE on the pool row), after the slot was freed but before anyone could see it.
    pool, booking = one_slot
    # What an early end leaves once its node is gone: an ending booking, ended now.
    Booking.objects.filter(pk=booking.pk).update(status=Booking.Status.ENDING, ended_at=now())
    NodeFactory(booking=booking, status=Node.Status.DESTROYED)

    def complete():
        return booking_complete_if_done(booking_id=booking.pk)

    assert _waits_for_pool_lock(pool, complete), "the completion freed the slot without the lock"
    assert Booking.objects.get(pk=booking.pk).status == Booking.Status.COMPLETED

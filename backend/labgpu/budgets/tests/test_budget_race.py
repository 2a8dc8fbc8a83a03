"""I-11 under a race: many requests against one hard budget, over real HTTP to a live,
multi-threaded server (each request its own thread and database connection), spread over eight
pools of eight instance types, so no pool or quota lock queues them: only the budget's lock can.
On two cores the requests seldom overlap between reading the spend and committing, so this test
alone passes without the lock too; the interleaving test below holds one booking inside that
window and fails without it."""

import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection

from labgpu.bookings.models import Booking
from labgpu.bookings.services import booking_create, rules
from labgpu.bookings.tests.test_invariants import PARALLEL, fire_in_parallel
from labgpu.bookings.tests.test_invariants import tokens as tokens  # the fixture
from labgpu.budgets import services
from labgpu.budgets.models import Budget
from labgpu.catalog.tests.factories import InstanceTypeFactory, NodePoolFactory
from labgpu.core.errors import ApplicationError
from labgpu.core.testing import backend_pid, waits_on_a_lock
from labgpu.quotas.tests.factories import QuotaFactory

STREAMS = 8


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_I11_parallel_bookings_never_overshoot_a_hard_budget(
    live_server,
    tokens,
    bob,
    vision_lab,
    mid_next_month,
):
    pools = []
    for index, price in enumerate([Decimal("10.00"), Decimal("15.00")] * (STREAMS // 2)):
        kind = InstanceTypeFactory(slug=f"race-{index}", price_per_hour=price)
        QuotaFactory(lab=vision_lab, instance_type=kind, month=mid_next_month.date().replace(day=1))
        pools.append(NodePoolFactory(instance_type=kind, capacity=PARALLEL, max_days_ahead=90))
    services.budget_create(
        actor=bob, lab=vision_lab, amount=Decimal(100), enforcement=Budget.Enforcement.HARD
    )
    bodies = []
    for index in range(PARALLEL):
        start = mid_next_month + timedelta(hours=index // STREAMS)
        bodies.append(
            {
                "pool": pools[index % STREAMS].pk,
                "start": start.isoformat(),
                "end": (start + timedelta(hours=1)).isoformat(),
            }
        )
    responses = fire_in_parallel(f"{live_server.url}/api/v1/bookings/", tokens, bodies)

    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {201, 409}, statuses
    assert all(r.json()["code"] == "budget_exceeded" for r in responses if r.status_code == 409)
    # The database's own sum of what was booked: hours × the instance type's hourly price.
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT COALESCE(
                       SUM(EXTRACT(EPOCH FROM b."end" - b.start) / 3600 * it.price_per_hour), 0
                   ),
                   COUNT(*)
            FROM bookings_booking b
            JOIN catalog_nodepool p ON p.id = b.pool_id
            JOIN catalog_instancetype it ON it.id = p.instance_type_id
            WHERE b.lab_id = %s AND b.status = ANY(%s)
            """,
            [vision_lab.pk, [str(s) for s in Booking.LIVE_STATUSES]],
        )
        booked, count = cursor.fetchone()
    assert count == statuses.count(201) > 0
    assert booked <= Decimal(100), booked
    # The budget was filled as far as one more 10.00 booking could not fit.
    assert booked > Decimal(100) - Decimal("15.00"), booked


@pytest.mark.django_db(transaction=True)
def test_I11_a_booking_waits_for_the_budget_another_is_spending(
    monkeypatch, bob, vision_lab, mid_next_month
):
    """Booking A passes the budget rule and is held before it commits; booking B (another pool,
    another instance type, so no pool or quota lock in common) must then wait on the budget's row
    lock and, once A commits, see A's spend and be refused. Without the lock B passes the rule
    while A is held and both commit: 20.00 booked against 15.00."""
    pools = []
    for index in range(2):
        kind = InstanceTypeFactory(slug=f"held-{index}", price_per_hour=Decimal("10.00"))
        QuotaFactory(lab=vision_lab, instance_type=kind, month=mid_next_month.date().replace(day=1))
        pools.append(NodePoolFactory(instance_type=kind, capacity=1, max_days_ahead=90))
    services.budget_create(
        actor=bob, lab=vision_lab, amount=Decimal(15), enforcement=Budget.Enforcement.HARD
    )
    a_passed, b_passed, release = threading.Event(), threading.Event(), threading.Event()
    original = rules.check_budget

    def held_check_budget(ask, snap):  # type: ignore[no-untyped-def]
        original(ask, snap)
        if threading.current_thread().name == "A":
            a_passed.set()
            release.wait(60)
        else:
            b_passed.set()

    monkeypatch.setattr(
        rules, "RULES", tuple(held_check_budget if r is original else r for r in rules.RULES)
    )
    outcome: dict[str, object] = {}
    b_backend: list[int] = []

    def book(name: str, pool) -> None:  # type: ignore[no-untyped-def]
        try:
            if name == "B":
                b_backend.append(backend_pid())
            booking, _ = booking_create(
                user=bob,
                lab=vision_lab,
                pool=pool.pk,
                start=mid_next_month,
                end=mid_next_month + timedelta(hours=1),
            )
            outcome[name] = booking.pk
        except ApplicationError as error:
            outcome[name] = error.code
        finally:
            connection.close()

    thread_a = threading.Thread(target=book, args=("A", pools[0]), name="A")
    thread_a.start()
    assert a_passed.wait(60), "booking A never reached the budget rule"
    thread_b = threading.Thread(target=book, args=("B", pools[1]), name="B")
    thread_b.start()
    # Until B either passes the rule (no lock: the defect) or waits on a row lock.
    waiting = waits_on_a_lock(b_backend, b_passed.wait)
    release.set()
    thread_a.join(60)
    thread_b.join(60)

    assert waiting, f"booking B did not wait for the budget's lock: {outcome}"
    assert isinstance(outcome["A"], int), outcome
    assert outcome["B"] == "budget_exceeded", outcome
    booked = Booking.objects.filter(lab=vision_lab, status__in=Booking.LIVE_STATUSES).count()
    assert booked == 1


def _one_pool(vision_lab, mid_next_month, slug):
    kind = InstanceTypeFactory(slug=slug, price_per_hour=Decimal("10.00"))
    QuotaFactory(lab=vision_lab, instance_type=kind, month=mid_next_month.date().replace(day=1))
    return NodePoolFactory(instance_type=kind, capacity=2, max_days_ahead=90)


@pytest.mark.django_db
def test_a_booking_reads_has_budget_under_the_lock_not_from_its_lab_object(
    bob, vision_lab, mid_next_month
):
    """The lab object a request loaded before the transaction says "no budget"; the lab's first
    (hard) budget is created after that: the booking must be checked against it."""
    pool = _one_pool(vision_lab, mid_next_month, "stale-flag")
    stale = type(vision_lab).objects.get(pk=vision_lab.pk)
    assert stale.has_budget is False
    services.budget_create(
        actor=bob, lab=vision_lab, amount=Decimal(5), enforcement=Budget.Enforcement.HARD
    )
    with pytest.raises(ApplicationError) as refused:
        booking_create(
            user=bob,
            lab=stale,
            pool=pool.pk,
            start=mid_next_month,
            end=mid_next_month + timedelta(hours=1),
        )
    assert refused.value.code == "budget_exceeded"
    assert not Booking.objects.filter(lab=vision_lab).exists()


@pytest.mark.django_db(transaction=True)
def test_I11_a_booking_racing_the_labs_first_budget_waits_for_it(
    monkeypatch, bob, vision_lab, mid_next_month
):
    """budget_create (a hard 5.00 budget, the lab's first) is held before it commits; a booking
    of 10.00 for the lab, in another thread and connection, must wait on the lab row (PostgreSQL's
    own record of a lock wait) and, once the budget commits, be refused by it. Without the lab
    lock the booking reads "no budget" and commits: 10.00 booked against 5.00."""
    pool = _one_pool(vision_lab, mid_next_month, "first-budget")
    stale = type(vision_lab).objects.get(pk=vision_lab.pk)
    held, release = threading.Event(), threading.Event()
    original_audit = services.audit_record

    def held_audit(**kwargs):  # type: ignore[no-untyped-def]
        original_audit(**kwargs)
        if kwargs.get("action") == "budget.create":
            held.set()
            release.wait(60)

    monkeypatch.setattr(services, "audit_record", held_audit)
    outcome: dict[str, object] = {}
    booking_backend: list[int] = []

    def create_budget() -> None:
        try:
            services.budget_create(
                actor=bob, lab=vision_lab, amount=Decimal(5), enforcement=Budget.Enforcement.HARD
            )
            outcome["budget"] = "created"
        finally:
            connection.close()

    def book() -> None:
        try:
            booking_backend.append(backend_pid())
            booking, _ = booking_create(
                user=bob,
                lab=stale,
                pool=pool.pk,
                start=mid_next_month,
                end=mid_next_month + timedelta(hours=1),
            )
            outcome["booking"] = booking.pk
        except ApplicationError as error:
            outcome["booking"] = error.code
        finally:
            connection.close()

    budget_thread = threading.Thread(target=create_budget)
    budget_thread.start()
    assert held.wait(60), "budget_create never reached its audit record"
    booking_thread = threading.Thread(target=book)
    booking_thread.start()
    waiting = waits_on_a_lock(booking_backend, lambda step: not _alive(booking_thread, step))
    release.set()
    budget_thread.join(60)
    booking_thread.join(60)

    assert outcome.get("budget") == "created", outcome
    assert waiting, f"the booking did not wait for the lab's budget: {outcome}"
    assert outcome["booking"] == "budget_exceeded", outcome
    assert not Booking.objects.filter(lab=vision_lab, status__in=Booking.LIVE_STATUSES).exists()


def _alive(thread: threading.Thread, step: float) -> bool:
    thread.join(step)
    return thread.is_alive()

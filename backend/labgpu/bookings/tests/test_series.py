"""Recurring series (issue 25 item 1): one request, every occurrence through the one rulebook,
checked against the booking rows in the database."""

import itertools
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from labgpu.accounts.models import Membership
from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Booking, BookingSeries
from labgpu.bookings.services.series import (
    SeriesRefused,
    recurrence_of,
    series_cancel,
    series_create,
    series_decide,
    series_move,
)
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.catalog.tests.factories import BlackoutFactory, NodePoolFactory
from labgpu.core.errors import ApplicationError, NotPermitted
from labgpu.core.timeutils import month_start, next_month, now
from labgpu.quotas.tests.factories import QuotaFactory

BERLIN = ZoneInfo("Europe/Berlin")
SHANGHAI = ZoneInfo("Asia/Shanghai")


def last_sunday_of_march() -> date:
    """The next spring-forward in Europe (last Sunday of March), at least a few days away."""
    year = now().year + (1 if now().date() >= date(now().year, 3, 20) else 0)
    day = date(year, 3, 31)
    return day - timedelta(days=(day.weekday() + 1) % 7)


@pytest.fixture
def far_pool(instance_type):
    """A pool that takes bookings a year ahead, with room for two at a time."""
    return NodePoolFactory(
        instance_type=instance_type,
        capacity=2,
        max_days_ahead=400,
        provisioning_lead_minutes=0,
        teardown_grace_minutes=0,
    )


def quota_months(lab, instance_type, first: date, months: int, gpu_hours=Decimal(1000)):
    month = month_start(first)
    for _ in range(months):
        QuotaFactory(lab=lab, instance_type=instance_type, month=month, gpu_hours=gpu_hours)
        month = next_month(month)


def weekly(count: int, zone: str = "Asia/Shanghai", **more):
    return recurrence_of(frequency="weekly", timezone=zone, count=count, **more)


def next_local(weekday: int, hour: int, zone: ZoneInfo, weeks_ahead: int = 1) -> datetime:
    local = now().astimezone(zone)
    day = local.date() + timedelta(days=7 * weeks_ahead + (weekday - local.weekday()))
    return datetime(day.year, day.month, day.day, hour, tzinfo=zone)


def live_rows(series: BookingSeries):
    return list(
        Booking.objects.filter(series=series, status__in=Booking.LIVE_STATUSES)
        .order_by("start")
        .values_list("start", "end", "status")
    )


@pytest.mark.django_db
def test_weekly_series_books_every_occurrence_as_a_booking(alice, far_pool, instance_type):
    first = next_local(2, 10, SHANGHAI)  # Wednesday 10:00 in alice's zone
    quota_months(alice.memberships.get().lab, instance_type, first.date(), 3)
    result = series_create(
        user=alice,
        pool=far_pool.pk,
        start=first,
        end=first + timedelta(hours=2),
        recurrence=weekly(6),
    )
    rows = live_rows(result.series)
    assert len(rows) == 6
    assert [s.astimezone(SHANGHAI).strftime("%a %H:%M") for s, _, _ in rows] == ["Wed 10:00"] * 6
    assert all(e - s == timedelta(hours=2) for s, e, _ in rows)
    assert [b - a for (a, _, _), (b, _, _) in itertools.pairwise(rows)] == [timedelta(days=7)] * 5
    assert {status for *_, status in rows} == {"scheduled"}
    # One audit entry per booking, as a single create writes, and one for the series.
    assert AuditEvent.objects.filter(action="booking.create").count() == 6
    assert AuditEvent.objects.filter(action="series.create").count() == 1


@pytest.mark.django_db
def test_weekly_on_chosen_weekdays_until_a_date_with_exceptions(alice, far_pool, instance_type):
    first = next_local(0, 9, SHANGHAI)  # a Monday
    quota_months(alice.memberships.get().lab, instance_type, first.date(), 3)
    last = first.date() + timedelta(days=13)  # two weeks: Mon, Thu, Mon, Thu
    skipped = first.date() + timedelta(days=3)
    result = series_create(
        user=alice,
        pool=far_pool.pk,
        start=first,
        end=first + timedelta(hours=1),
        recurrence=recurrence_of(
            frequency="weekly",
            timezone="Asia/Shanghai",
            weekdays=["TH", "MO"],
            until=last,
            exceptions=[skipped],
        ),
    )
    days = [s.astimezone(SHANGHAI).date() for s, _, _ in live_rows(result.series)]
    assert days == [first.date(), first.date() + timedelta(days=7), first.date() + timedelta(10)]


@pytest.mark.django_db
def test_monthly_on_a_day_and_daily(alice, far_pool, instance_type):
    nm = next_month(month_start(now()))
    first = datetime(nm.year, nm.month, 5, 9, tzinfo=SHANGHAI)
    quota_months(alice.memberships.get().lab, instance_type, first.date(), 5)
    monthly = series_create(
        user=alice,
        pool=far_pool.pk,
        start=first,
        end=first + timedelta(hours=1),
        recurrence=recurrence_of(frequency="monthly", timezone="Asia/Shanghai", count=3),
    )
    local = [s.astimezone(SHANGHAI) for s, _, _ in live_rows(monthly.series)]
    assert [(d.day, d.hour) for d in local] == [(5, 9)] * 3
    assert len({(d.year, d.month) for d in local}) == 3
    daily = series_create(
        user=alice,
        pool=far_pool.pk,
        start=first + timedelta(hours=3),
        end=first + timedelta(hours=4),
        recurrence=recurrence_of(frequency="daily", timezone="Asia/Shanghai", count=4),
    )
    starts = [s for s, _, _ in live_rows(daily.series)]
    assert [b - a for a, b in itertools.pairwise(starts)] == [timedelta(days=1)] * 3


@pytest.mark.django_db
def test_dst_weekly_berlin_across_the_march_change_keeps_nine_local(alice, far_pool, instance_type):
    change = last_sunday_of_march()
    monday_before = change - timedelta(days=13)
    first = datetime(monday_before.year, 3, monday_before.day, 9, tzinfo=BERLIN)
    quota_months(alice.memberships.get().lab, instance_type, first.date(), 2)
    result = series_create(
        user=alice,
        pool=far_pool.pk,
        start=first,
        end=first + timedelta(hours=2),
        recurrence=weekly(4, zone="Europe/Berlin"),
    )
    starts = [s for s, _, _ in live_rows(result.series)]
    assert [s.astimezone(BERLIN).strftime("%H:%M") for s in starts] == ["09:00"] * 4
    # The stored UTC instants move by an hour across the change: 08:00Z before, 07:00Z after.
    assert [s.astimezone(UTC).hour for s in starts] == [8, 8, 7, 7]
    assert starts[2] - starts[1] == timedelta(days=7, hours=-1)


@pytest.mark.django_db
def test_occurrences_accepted_earlier_count_against_the_quota_of_later_ones(
    alice, far_pool, instance_type
):
    nm = next_month(month_start(now()))
    first = datetime(nm.year, nm.month, 10, 10, tzinfo=SHANGHAI)
    lab = alice.memberships.get().lab
    # 5 GPU-hours a month: two 2-hour occurrences fit in one month, a third does not.
    month = month_start(first.astimezone(UTC).date())
    for _ in range(3):
        QuotaFactory(lab=lab, instance_type=instance_type, month=month, gpu_hours=Decimal(5))
        month = next_month(month)
    result = series_create(
        user=alice,
        pool=far_pool.pk,
        start=first,
        end=first + timedelta(hours=2),
        recurrence=recurrence_of(frequency="daily", timezone="Asia/Shanghai", count=3),
    )
    codes = [o.code for o in result.occurrences]
    assert codes == ["", "", "quota_exceeded"]
    assert Booking.objects.filter(series=result.series).count() == codes.count("")
    assert [r["code"] for r in BookingSeries.objects.get().refused] == [c for c in codes if c]


@pytest.mark.django_db
def test_occurrences_accepted_earlier_count_against_member_limits(
    alice, far_pool, instance_type, quotas
):
    membership = Membership.objects.get(user=alice)
    membership.max_hours_per_week = 5
    membership.save(update_fields=["max_hours_per_week"])
    first = next_local(0, 9, SHANGHAI, weeks_ahead=1)  # Monday: the week is alice's Mon–Sun
    result = series_create(
        user=alice,
        pool=far_pool.pk,
        start=first,
        end=first + timedelta(hours=2),
        recurrence=recurrence_of(frequency="daily", timezone="Asia/Shanghai", count=3),
    )
    assert [o.code for o in result.occurrences] == ["", "", "member_hours_exceeded"]
    assert Booking.objects.filter(series=result.series).count() == 2


@pytest.mark.django_db
def test_capacity_and_blackouts_refuse_single_occurrences_and_the_rest_is_booked(
    alice, mallory, instance_type, quotas
):
    pool = NodePoolFactory(
        instance_type=instance_type, capacity=1, max_days_ahead=60, teardown_grace_minutes=0
    )
    first = next_local(2, 10, SHANGHAI)
    second = first + timedelta(days=7)
    BookingFactory(
        pool=pool,
        lab=mallory.memberships.get().lab,
        user=mallory,
        start=second,
        end=second + timedelta(hours=1),
        reserved_start=second - timedelta(minutes=10),
    )
    third = first + timedelta(days=14)
    BlackoutFactory(pool=pool, start=third, end=third + timedelta(hours=3))
    result = series_create(
        user=alice,
        pool=pool.pk,
        start=first,
        end=first + timedelta(hours=1),
        recurrence=weekly(4),
    )
    assert [o.code for o in result.occurrences] == ["", "pool_full", "blackout", ""]
    assert [o.message != "" for o in result.occurrences] == [False, True, True, False]
    assert len(live_rows(result.series)) == 2


@pytest.mark.django_db
def test_all_or_nothing_writes_nothing_when_any_occurrence_is_refused(
    alice, mallory, instance_type, quotas
):
    pool = NodePoolFactory(instance_type=instance_type, capacity=1, max_days_ahead=60)
    first = next_local(2, 10, SHANGHAI)
    BookingFactory(
        pool=pool,
        lab=mallory.memberships.get().lab,
        user=mallory,
        start=first + timedelta(days=7),
        end=first + timedelta(days=7, hours=1),
    )
    before = Booking.objects.count()
    with pytest.raises(SeriesRefused) as refused:
        series_create(
            user=alice,
            pool=pool.pk,
            start=first,
            end=first + timedelta(hours=1),
            recurrence=weekly(3),
            all_or_nothing=True,
        )
    listed = refused.value.extra["occurrences"]
    assert [o["status"] for o in listed] == ["not_booked", "refused", "not_booked"]
    assert listed[1]["code"] == "pool_full"
    assert Booking.objects.count() == before
    assert not BookingSeries.objects.exists()
    assert not AuditEvent.objects.filter(action__in=["booking.create", "series.create"]).exists()


@pytest.mark.django_db
def test_a_series_needing_approval_is_approved_once_by_a_lab_admin(
    alice, bob, mallory, instance_type, quotas, settings
):
    settings.LABGPU_ALLOW_SELF_APPROVAL = False
    pool = NodePoolFactory(instance_type=instance_type, requires_approval=True, max_days_ahead=60)
    first = next_local(2, 10, SHANGHAI)
    result = series_create(
        user=alice, pool=pool.pk, start=first, end=first + timedelta(hours=1), recurrence=weekly(3)
    )
    assert {status for *_, status in live_rows(result.series)} == {"pending"}
    with pytest.raises(NotPermitted):
        series_decide(actor=alice, series=result.series, approve=True)
    with pytest.raises(NotPermitted):
        series_decide(actor=mallory, series=result.series, approve=True)
    decision = series_decide(actor=bob, series=result.series, approve=True, reason="ok")
    assert len(decision.approved) == 3
    rows = Booking.objects.filter(series=result.series)
    assert set(rows.values_list("status", flat=True)) == {"scheduled"}
    assert set(rows.values_list("decided_by__username", flat=True)) == {"bob"}
    audit = AuditEvent.objects.filter(action="series.approve")
    assert audit.count() == 1 and audit.get().data["decided"] == decision.approved
    with pytest.raises(ApplicationError) as again:
        series_decide(actor=bob, series=result.series, approve=True)
    assert again.value.code == "already_decided"


@pytest.mark.django_db
def test_cancel_this_and_following_and_move_keeps_local_time(alice, far_pool, instance_type):
    change = last_sunday_of_march()
    monday = change - timedelta(days=13)
    first = datetime(monday.year, 3, monday.day, 9, tzinfo=BERLIN)
    quota_months(alice.memberships.get().lab, instance_type, first.date(), 2)
    series = series_create(
        user=alice,
        pool=far_pool.pk,
        start=first,
        end=first + timedelta(hours=1),
        recurrence=weekly(5, zone="Europe/Berlin"),
    ).series
    occurrences = list(Booking.objects.filter(series=series).order_by("start"))
    # This and following, from the second: one hour later on Berlin's wall clock.
    series_move(actor=alice, series=series, from_booking=occurrences[1], shift_minutes=60)
    local = [s.astimezone(BERLIN).strftime("%H:%M") for s, _, _ in live_rows(series)]
    assert local == ["09:00", "10:00", "10:00", "10:00", "10:00"]
    cancelled = series_cancel(actor=alice, series=series, from_booking=occurrences[3])
    assert [b.pk for b in cancelled] == [occurrences[3].pk, occurrences[4].pk]
    assert len(live_rows(series)) == 3
    assert AuditEvent.objects.filter(action="series.cancel").count() == 1


@pytest.mark.django_db
def test_outsiders_cannot_change_a_series(alice, mallory, far_pool, instance_type):
    first = next_local(2, 10, SHANGHAI)
    quota_months(alice.memberships.get().lab, instance_type, first.date(), 2)
    series = series_create(
        user=alice,
        pool=far_pool.pk,
        start=first,
        end=first + timedelta(hours=1),
        recurrence=weekly(2),
    ).series
    with pytest.raises(NotPermitted):
        series_cancel(actor=mallory, series=series)
    assert len(live_rows(series)) == 2


@pytest.mark.django_db
def test_a_series_locks_all_its_quota_months_before_any_budget(alice, bob, far_pool, instance_type):
    """A single booking locks quota(its months) then budgets; a series locking quota(Dec), a
    budget, then quota(Jan) would deadlock against it. The statements, in the order sent."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from labgpu.budgets import services as budgets

    lab = alice.memberships.get().lab
    first = next_local(2, 10, SHANGHAI)
    quota_months(lab, instance_type, first.date(), 4)
    budgets.budget_create(actor=bob, lab=lab, amount=Decimal(100000))
    with CaptureQueriesContext(connection) as queries:
        series_create(
            user=alice,
            pool=far_pool.pk,
            start=first,
            end=first + timedelta(hours=2),
            recurrence=weekly(10),
        )
    locks = [q["sql"] for q in queries.captured_queries if "FOR UPDATE" in q["sql"].upper()]
    quota_table, budget_table = "quotas_quota", "budgets_budget"
    first_budget = next(i for i, sql in enumerate(locks) if budget_table in sql)
    before = [sql for sql in locks[:first_budget] if quota_table in sql]
    assert before, locks[:first_budget]
    # The first quota lock, before any budget's, already holds the last occurrence's month.
    last = (first + timedelta(weeks=9)).astimezone(UTC).date()
    assert month_start(last) != month_start(first.date())
    assert repr(month_start(last)) in before[0], before


@pytest.mark.django_db
def test_occurrences_accepted_earlier_count_against_the_budget_of_later_ones(
    alice, bob, far_pool, instance_type
):
    from labgpu.budgets import services as budgets
    from labgpu.budgets.models import Budget
    from labgpu.budgets.selectors import hourly_price

    nm = next_month(month_start(now()))
    first = datetime(nm.year, nm.month, 3, 10, tzinfo=SHANGHAI)
    lab = alice.memberships.get().lab
    quota_months(lab, instance_type, first.date(), 3)
    # Room for two 2-hour occurrences in the month, not three.
    price = hourly_price(instance_type) * instance_type.gpu_count
    budgets.budget_create(actor=bob, lab=lab, amount=price * 5, enforcement=Budget.Enforcement.HARD)
    result = series_create(
        user=alice,
        pool=far_pool.pk,
        start=first,
        end=first + timedelta(hours=2),
        recurrence=recurrence_of(frequency="daily", timezone="Asia/Shanghai", count=3),
    )
    assert [o.code for o in result.occurrences] == ["", "", "budget_exceeded"]
    assert Booking.objects.filter(series=result.series).count() == 2


@pytest.mark.django_db
def test_each_occurrence_sees_what_a_fresh_read_of_the_database_would(
    alice, bob, mallory, instance_type
):
    """The series reads once for all its occurrences (snapshot.SeriesWindow); each occurrence's
    snapshot must equal the one `snapshot_load` reads from the database at that moment, with
    the earlier occurrences written: reservations, blackouts, the member's bookings, the quota's
    usage and the budget's spend."""
    from labgpu.bookings.services.changes import book
    from labgpu.bookings.services.snapshot import (
        Ask,
        SeriesWindow,
        pool_lock,
        snapshot_load,
    )
    from labgpu.budgets import services as budgets
    from labgpu.budgets.models import Budget

    pool = NodePoolFactory(
        instance_type=instance_type, capacity=2, max_days_ahead=400, teardown_grace_minutes=30
    )
    lab = alice.memberships.get().lab
    membership = Membership.objects.get(user=alice)
    membership.max_hours_per_week = 40
    membership.max_concurrent_bookings = 3
    membership.save(update_fields=["max_hours_per_week", "max_concurrent_bookings"])
    first = next_local(2, 10, SHANGHAI)
    quota_months(lab, instance_type, first.date(), 4)
    budgets.budget_create(
        actor=bob, lab=lab, amount=Decimal(100000), enforcement=Budget.Enforcement.HARD
    )
    # Someone else's booking, alice's own in another pool, and a blackout along the way.
    week = timedelta(days=7)
    BookingFactory(
        pool=pool,
        lab=mallory.memberships.get().lab,
        user=mallory,
        start=first + week,
        end=first + week + timedelta(hours=3),
    )
    other_pool = NodePoolFactory(instance_type=instance_type, max_days_ahead=400)
    BookingFactory(
        pool=other_pool,
        lab=lab,
        user=alice,
        start=first + 3 * week - timedelta(hours=1),
        end=first + 3 * week + timedelta(hours=1),
    )
    BlackoutFactory(pool=pool, start=first + 5 * week, end=first + 5 * week + timedelta(hours=1))
    # Week 2's occurrence fits only by repacking (no slot is free throughout: X holds slot 0
    # before it, Y slot 1 after it), which moves Y, a long booking, to slot 0; week 3's
    # occurrence then meets Y in its new slot.
    two, hour, other = first + 2 * week, timedelta(hours=1), mallory.memberships.get().lab
    BookingFactory(pool=pool, lab=other, user=mallory, start=two - hour, end=two + hour, slot=0)
    y = BookingFactory(
        pool=pool, lab=other, user=mallory, start=two + hour * 1.5, end=two + 8 * 24 * hour, slot=1
    )
    membership.refresh_from_db()
    moment = now()
    planned = [(first + i * week, first + i * week + timedelta(hours=2)) for i in range(10)]
    asks = [
        Ask(
            user=alice,
            lab=lab,
            membership=membership,
            start=s,
            end=e,
            on_demand=False,
            moment=moment,
        )
        for s, e in planned
    ]
    locked = pool_lock(pool.pk, lab_id=lab.pk)
    window = SeriesWindow(asks, locked)
    booked = 0
    for ask in asks:
        snap, fresh = window.snapshot(ask), snapshot_load(ask, locked)
        assert sorted(snap.taken) == sorted(fresh.taken)
        assert snap.blackouts == fresh.blackouts
        assert sorted(snap.member_bookings) == sorted(fresh.member_bookings)
        assert [(m.month, m.usage) for m in snap.quota] == [(m.month, m.usage) for m in fresh.quota]
        assert [(p.begin, p.spend, p.needed) for p in snap.budgets] == [
            (p.begin, p.spend, p.needed) for p in fresh.budgets
        ]
        try:
            booking = book(ask, locked, purpose="", snap=snap)
        except ApplicationError:
            continue
        window.add(booking, snap)
        booked += 1
    assert booked == 9  # the blackout's week is refused
    y.refresh_from_db()
    assert y.slot == 0  # repacked
    assert Booking.objects.filter(pool=pool, user=alice).count() == booked


@pytest.mark.django_db
def test_a_52_week_series_reads_once_not_per_occurrence(alice, bob, far_pool, instance_type):
    """Pin the cost (docs/benchmarks.md, the 52-week series): with member limits and a budget,
    every rule's reads are made once for the series; each occurrence costs its INSERTs only."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from labgpu.budgets import services as budgets

    lab = alice.memberships.get().lab
    Membership.objects.filter(user=alice).update(max_hours_per_week=100, max_concurrent_bookings=5)
    first = next_local(2, 10, SHANGHAI)
    quota_months(lab, instance_type, first.date(), 14)
    budgets.budget_create(actor=bob, lab=lab, amount=Decimal(10000000))
    with CaptureQueriesContext(connection) as queries:
        result = series_create(
            user=alice,
            pool=far_pool.pk,
            start=first,
            end=first + timedelta(hours=2),
            recurrence=weekly(52),
        )
    assert sum(1 for o in result.occurrences if o.booking) == 52
    sql = [q["sql"].upper() for q in queries.captured_queries]
    reads = [s for s in sql if "SELECT" in s and "INSERT" not in s]
    # Per month touched (13 or 14): the quota's usage and the budget's spend; a few more once.
    assert len(reads) <= 2 * 14 + 10, len(reads)
    assert not [s for s in sql if s.startswith("SAVEPOINT")][1:], "a savepoint per occurrence"
    audits = [s for s in sql if 'INSERT INTO "AUDIT_AUDITEVENT"' in s]
    assert len(audits) == 2, "the occurrences' entries in one INSERT, then the series'"

"""What a pool's calendar shows free (I-1): each availability interval holds the live reservations
and blackouts of the pool at every moment inside it, checked against the booking and blackout rows
themselves (not another computation of ours)."""

from datetime import timedelta
from itertools import pairwise

import pytest

from labgpu.bookings.models import Booking
from labgpu.bookings.selectors import availability_intervals, reservations_and_blackouts
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.catalog.models import Blackout
from labgpu.catalog.tests.factories import BlackoutFactory, NodePoolFactory

pytestmark = pytest.mark.django_db

H = timedelta(hours=1)
US = timedelta(microseconds=1)
Status = Booking.Status


@pytest.fixture
def held(alice, vision_lab, pool, instance_type, tomorrow):
    """Reservations of three slots that begin before the window, touch end to start in one slot,
    carry microseconds, outlast the window or miss it; dead ones and another pool's; blackouts
    that overlap each other, touch a reservation and cross the window's end."""
    pool.capacity = 3
    pool.save(update_fields=["capacity"])
    t = tomorrow
    other_pool = NodePoolFactory(instance_type=instance_type)

    def reserve(slot, start, end, status=Status.SCHEDULED, in_pool=pool):
        BookingFactory(
            user=alice, lab=vision_lab, pool=in_pool, slot=slot, status=status,
            start=start, end=end, reserved_start=start, reserved_end=end,
        )  # fmt: skip

    reserve(0, t - 3 * H, t + H)
    reserve(0, t + H, t + 3 * H, Status.READY)
    reserve(0, t + 9 * H, t + 10 * H)  # after the window
    reserve(1, t, t + 2 * H, Status.PENDING)
    reserve(1, t + 3 * H, t + 6 * H, Status.ENDING)
    reserve(2, t + 2 * H + 123 * US, t + 4 * H, Status.PROVISIONING)
    reserve(2, t + 5 * H, t + 20 * H)  # outlasts the window
    reserve(2, t + H / 2, t + 1.5 * H)
    reserve(2, t + H, t + 2 * H, Status.CANCELLED)
    reserve(1, t + 6 * H, t + 7 * H, Status.COMPLETED)
    reserve(0, t + 4 * H, t + 5 * H, in_pool=other_pool)
    for start, end in [(t + 4 * H, t + 5 * H), (t + 4.5 * H, t + 5.5 * H), (t + 7 * H, t + 9 * H)]:
        BlackoutFactory(pool=pool, start=start, end=end)
    BlackoutFactory(pool=other_pool, start=t + H, end=t + 2 * H)
    return t - H / 2, t + 8 * H


def test_each_interval_holds_the_live_reservations_and_blackouts_at_every_moment(pool, held):
    start, end = held
    live = list(
        Booking.objects.filter(pool=pool, status__in=Booking.LIVE_STATUSES).values_list(
            "reserved_start", "reserved_end"
        )
    )
    dark = list(Blackout.objects.filter(pool=pool).values_list("start", "end"))

    intervals = availability_intervals(pool, start, end)

    assert intervals[0].start == start and intervals[-1].end == end
    for before, after in pairwise(intervals):
        assert before.end == after.start  # no gap, no overlap
        assert (before.used, before.blackout) != (after.used, after.blackout)  # merged
    # Usage changes only where a reservation or blackout begins or ends: each such moment in the
    # window (and its start) says what holds from there on.
    moments = {start, *(m for period in live + dark for m in period if start <= m < end)}
    for moment in sorted(moments):
        (piece,) = [piece for piece in intervals if piece.start <= moment < piece.end]
        used = sum(r_start <= moment < r_end for r_start, r_end in live)
        blackout = any(b_start <= moment < b_end for b_start, b_end in dark)
        free = 0 if blackout else max(pool.capacity - used, 0)
        assert (piece.used, piece.blackout, piece.free) == (used, blackout, free), moment
    assert {piece.used for piece in intervals} == {1, 2, 3}
    assert any(piece.blackout for piece in intervals)


def test_reservations_of_a_period_of_no_length_are_those_that_hold_its_instant(pool, held):
    start, _ = held
    moment = start + 1.25 * H  # three slots held
    periods, _ = reservations_and_blackouts(pool, (moment, moment), (start, start))
    live = Booking.objects.filter(
        pool=pool,
        status__in=Booking.LIVE_STATUSES,
        reserved_start__lte=moment,
        reserved_end__gt=moment,
    )
    assert sorted(periods) == sorted(live.values_list("reserved_start", "reserved_end"))
    assert len(periods) == 3


def test_reservations_leave_out_the_one_asked_to(pool, held):
    start, end = held
    every, blackouts = reservations_and_blackouts(pool, (start, end), (start, end))
    mine = Booking.objects.filter(pool=pool, status=Status.READY).get()
    others, same_blackouts = reservations_and_blackouts(
        pool, (start, end), (start, end), exclude_id=mine.pk
    )
    assert sorted([*others, (mine.reserved_start, mine.reserved_end)]) == sorted(every)
    assert sorted(same_blackouts) == sorted(blackouts) and len(blackouts) == 3

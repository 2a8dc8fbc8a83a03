"""Each booking rule answers with a clear error and a stable code (docs/api.md lists them)."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from conftest import client_for
from labgpu.accounts.tests.factories import LabFactory, MembershipFactory
from labgpu.bookings.models import Booking
from labgpu.catalog.tests.factories import BlackoutFactory, NodePoolFactory
from labgpu.core.timeutils import month_start, next_month, now
from labgpu.quotas.models import Quota

pytestmark = pytest.mark.django_db
URL = "/api/v1/bookings/"


@pytest.fixture(params=["session", "token"])
def as_alice(request, alice):
    """Every rule both ways: with a session and with an API token (scripts book with tokens)."""
    return client_for(alice, scopes=None if request.param == "session" else ["book"])


def book(client, pool, start, end, **extra):
    body = {"pool": pool.pk, "end": end.isoformat(), "purpose": "test", **extra}
    if start is not None:
        body["start"] = start.isoformat()
    return client.post(URL, body, format="json")


def assert_error(response, status, code, field=None):
    assert response.status_code == status, response.content
    body = response.json()
    assert body["code"] == code, body
    assert body["message"]
    if field:
        assert field in body["extra"]["fields"], body


def test_a_valid_booking_is_scheduled(as_alice, pool, quotas, tomorrow):
    response = book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=2))
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "scheduled"
    assert body["gpu_hours"] == "2.00"
    assert body["estimated_cost"] == "3.98"
    assert body["lab"]["slug"] == "vision"


def test_naive_datetime_is_rejected(as_alice, pool, quotas, tomorrow):
    response = as_alice.post(
        URL,
        {"pool": pool.pk, "start": "2030-01-01T10:00:00", "end": "2030-01-01T12:00:00"},
        format="json",
    )
    assert_error(response, 400, "naive_datetime", "start")


def test_end_before_start_is_rejected(as_alice, pool, quotas, tomorrow):
    assert_error(book(as_alice, pool, tomorrow, tomorrow), 400, "end_before_start", "end")


def test_off_granularity_is_rejected(as_alice, pool, quotas, tomorrow):
    start = tomorrow + timedelta(minutes=7)
    assert_error(
        book(as_alice, pool, start, start + timedelta(hours=1)), 400, "off_granularity", "start"
    )


def test_too_short_and_too_long_are_rejected(as_alice, quotas, instance_type, tomorrow):
    pool = NodePoolFactory(
        instance_type=instance_type,
        granularity_minutes=15,
        min_duration_minutes=60,
        max_duration_minutes=120,
    )
    short = book(as_alice, pool, tomorrow, tomorrow + timedelta(minutes=30))
    assert_error(short, 400, "too_short", "end")
    long = book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=3))
    assert_error(long, 400, "too_long", "end")
    # In hours, as the booking form's hint states the limits (issue 14 bug 14).
    assert "at least 1 hour." in short.json()["message"]
    assert "at most 2 hours" in long.json()["message"]


def test_too_far_ahead_is_rejected(as_alice, pool, quotas, tomorrow):
    start = tomorrow + timedelta(days=pool.max_days_ahead + 1)
    assert_error(
        book(as_alice, pool, start, start + timedelta(hours=1)), 400, "too_far_ahead", "start"
    )


def test_start_in_the_past_is_rejected(as_alice, pool, quotas, tomorrow):
    start = tomorrow - timedelta(days=2)
    assert_error(
        book(as_alice, pool, start, start + timedelta(hours=1)), 400, "start_in_past", "start"
    )


def test_overlapping_a_blackout_is_rejected(as_alice, pool, quotas, tomorrow):
    BlackoutFactory(
        pool=pool, start=tomorrow + timedelta(hours=1), end=tomorrow + timedelta(hours=3)
    )
    response = book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=2))
    assert_error(response, 400, "blackout", "start")
    assert response.json()["extra"]["blackout"]["reason"] == "Rack maintenance"


def test_booking_for_a_lab_you_are_not_in_is_rejected(as_alice, pool, quotas, other_lab, tomorrow):
    # Another lab's id reads as an unknown one (issue 11 item 12: no names, no existence).
    response = book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=1), lab=other_lab.pk)
    assert_error(response, 400, "does_not_exist", "lab")
    assert other_lab.name not in response.content.decode()


def test_member_of_several_labs_must_name_one(as_alice, alice, pool, quotas, other_lab, tomorrow):
    MembershipFactory(user=alice, lab=other_lab)
    assert_error(
        book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=1)), 400, "lab_required", "lab"
    )
    response = book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=1), lab=other_lab.pk)
    assert response.status_code == 201
    assert response.json()["lab"]["slug"] == "language"


def test_lab_not_allowed_on_pool_is_rejected(as_alice, pool, quotas, other_lab, tomorrow):
    pool.allowed_labs.set([other_lab])
    # The pool is invisible to alice's lab, so it is not even a valid choice.
    response = book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=1))
    assert_error(response, 400, "does_not_exist", "pool")


def test_lab_not_allowed_when_pool_visible_through_another_lab(
    as_alice, alice, pool, quotas, other_lab, vision_lab, tomorrow
):
    MembershipFactory(user=alice, lab=other_lab)
    pool.allowed_labs.set([other_lab])
    response = book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=1), lab=vision_lab.pk)
    assert_error(response, 403, "lab_not_allowed", "pool")


def test_member_weekly_hours_limit(as_alice, alice, vision_lab, pool, quotas, mid_next_week):
    alice.memberships.filter(lab=vision_lab).update(max_hours_per_week=3)
    start = mid_next_week  # both bookings in one of her weeks, whenever the test runs
    assert book(as_alice, pool, start, start + timedelta(hours=2)).status_code == 201
    response = book(as_alice, pool, start + timedelta(hours=3), start + timedelta(hours=5))
    assert_error(response, 409, "member_hours_exceeded")
    assert response.json()["extra"]["remaining_hours"] == 1
    # The week the refusal is about, as the member's Monday (the SPA says it in their language).
    monday = mid_next_week.astimezone(ZoneInfo(alice.timezone)).date()
    monday -= timedelta(days=monday.weekday())
    assert response.json()["extra"]["week_start"] == monday.isoformat()


def test_member_concurrent_bookings_limit(as_alice, alice, vision_lab, pool, quotas, tomorrow):
    alice.memberships.filter(lab=vision_lab).update(max_concurrent_bookings=1)
    assert book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=2)).status_code == 201
    response = book(as_alice, pool, tomorrow + timedelta(hours=1), tomorrow + timedelta(hours=3))
    assert_error(response, 409, "member_concurrency_exceeded")
    # A later, non-overlapping booking is fine.
    later = tomorrow + timedelta(hours=5)
    assert book(as_alice, pool, later, later + timedelta(hours=1)).status_code == 201


def test_full_pool_answers_409_with_next_free_windows(as_alice, pool, quotas, tomorrow):
    for _ in range(pool.capacity):
        assert book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=2)).status_code == 201
    response = book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=2))
    assert_error(response, 409, "pool_full")
    windows = response.json()["extra"]["next_free"]
    assert windows, "a full pool must suggest where to go instead"
    first_start = windows[0]["start"]
    # Free again once the booked nodes are torn down (end + grace) and the next one provisioned.
    from datetime import datetime

    assert datetime.fromisoformat(first_start) >= tomorrow + timedelta(hours=2, minutes=15)
    follow = book(
        as_alice,
        pool,
        datetime.fromisoformat(first_start),
        datetime.fromisoformat(windows[0]["end"]),
    )
    assert follow.status_code == 201, follow.content


def test_quota_exceeded_reports_hours_remaining(as_alice, pool, quotas, mid_next_month):
    for quota in quotas:
        quota.gpu_hours = 3
        quota.save()
    start = mid_next_month
    assert book(as_alice, pool, start, start + timedelta(hours=2)).status_code == 201
    later = start + timedelta(hours=4)
    response = book(as_alice, pool, later, later + timedelta(hours=2))
    assert_error(response, 409, "quota_exceeded")
    assert response.json()["extra"]["remaining_gpu_hours"] == "1.00"


def test_lab_admins_hear_once_at_80_and_at_100_percent_of_quota(
    as_alice, bob, pool, quotas, mid_next_month, mailoutbox, django_capture_on_commit_callbacks
):
    for quota in quotas:
        quota.gpu_hours = 10
        quota.save()

    def book_hour(start, hours=1):
        with django_capture_on_commit_callbacks(execute=True):
            return book(as_alice, pool, start, start + timedelta(hours=hours))

    start = mid_next_month
    assert book_hour(start, hours=7).status_code == 201
    assert mailoutbox == []
    start += timedelta(hours=8)
    assert book_hour(start).status_code == 201
    assert [m.to for m in mailoutbox] == [[bob.email]] and "80%" in mailoutbox[0].subject
    assert book_hour(start + timedelta(hours=2)).status_code == 201
    assert len(mailoutbox) == 1  # 90 %: already told
    assert book_hour(start + timedelta(hours=4)).status_code == 201
    assert len(mailoutbox) == 2 and "100%" in mailoutbox[1].subject
    assert_error(book_hour(start + timedelta(hours=6)), 409, "quota_exceeded")


def test_no_quota_means_no_booking(as_alice, pool, tomorrow):
    response = book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=1))
    assert_error(response, 409, "quota_exceeded")


def test_pool_requiring_approval_books_pending_and_holds_the_slot(
    as_alice, quotas, instance_type, tomorrow
):
    pool = NodePoolFactory(instance_type=instance_type, capacity=1, requires_approval=True)
    first = book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=1))
    assert first.status_code == 201 and first.json()["status"] == "pending"
    assert_error(book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=1)), 409, "pool_full")


def test_on_demand_booking_starts_now_and_is_due_at_once(as_alice, pool, quotas):
    end = now() + timedelta(hours=2)
    end = end.replace(minute=0 if end.minute < 30 else 30, second=0, microsecond=0)
    response = book(as_alice, pool, None, end)
    assert response.status_code == 201, response.content
    booking = Booking.objects.get(pk=response.json()["id"])
    assert booking.on_demand
    assert abs((booking.start - now()).total_seconds()) < 5
    assert booking.reserved_start == booking.start  # no lead: provisioning is due immediately


def test_on_demand_within_the_current_minute_is_exempt_from_granularity(as_alice, pool, quotas):
    end = (now() + timedelta(hours=3)).replace(minute=0, second=0, microsecond=0)
    response = book(as_alice, pool, now() - timedelta(seconds=20), end)
    assert response.status_code == 201, response.content
    assert response.json()["on_demand"] is True


def test_unknown_pool_and_missing_fields_name_the_field(as_alice, quotas, tomorrow):
    response = as_alice.post(URL, {}, format="json")
    assert response.status_code == 400
    fields = response.json()["extra"]["fields"]
    assert "pool" in fields and "end" in fields
    unknown = as_alice.post(URL, {"pool": 999999, "end": tomorrow.isoformat()}, format="json")
    assert_error(unknown, 400, "does_not_exist", "pool")


def test_non_members_cannot_book_at_all(pool, quotas, tomorrow):
    from conftest import client_for
    from labgpu.accounts.tests.factories import UserFactory

    stranger = client_for(UserFactory(username="stranger"))
    response = book(stranger, pool, tomorrow, tomorrow + timedelta(hours=1))
    assert_error(response, 403, "not_a_member", "lab")


def test_lab_factory_is_independent():
    assert LabFactory._meta.model.__name__ == "Lab"


def extend(client, booking_id, end):
    return client.post(f"{URL}{booking_id}/extend/", {"end": end.isoformat()}, format="json")


def test_an_extension_needs_quota_only_in_the_months_it_adds_to(
    as_alice, vision_lab, instance_type, quotas
):
    """A booking running since last month: one more hour this month must not be refused because
    last month's quota has since been spent or lowered. (Session 7's final CI ran just after
    midnight UTC on Dec 1; the quick "+1 h" of a node running since Nov 30 was refused.)"""
    pool = NodePoolFactory(instance_type=instance_type, max_days_ahead=100)
    first = next_month(month_start(now()))
    second = next_month(first)
    boundary = datetime(second.year, second.month, 1, tzinfo=UTC)
    booking = book(as_alice, pool, boundary - timedelta(hours=2), boundary + timedelta(hours=2))
    assert booking.status_code == 201, booking.content
    booking_id = booking.json()["id"]
    Quota.objects.filter(lab=vision_lab, month=first).update(gpu_hours=0)

    later = extend(as_alice, booking_id, boundary + timedelta(hours=3))
    assert later.status_code == 200, later.content
    assert Booking.objects.get(pk=booking_id).end == boundary + timedelta(hours=3)

    # The month it adds to is still checked, against the booking's whole share of that month.
    Quota.objects.filter(lab=vision_lab, month=second).update(gpu_hours=3 * instance_type.gpu_count)
    refused = extend(as_alice, booking_id, boundary + timedelta(hours=4))
    assert_error(refused, 409, "quota_exceeded")
    assert refused.json()["extra"]["month"] == second.isoformat()
    assert Booking.objects.get(pk=booking_id).end == boundary + timedelta(hours=3)


def test_an_extension_needs_weekly_hours_only_in_the_weeks_it_adds_to(
    as_alice, alice, vision_lab, pool, quotas
):
    """The same for a member's hours per week: a booking over Sunday night that the lab admin's
    new, lower limit would refuse today is not re-judged for the week it began in."""
    alice.timezone = "UTC"
    alice.save(update_fields=["timezone"])
    # The Monday after next: at least a week ahead, so the booking from 21:00 on the Sunday
    # before it never starts in the past (next Monday did, late on a Sunday).
    today = now()
    monday = (today + timedelta(days=14 - today.weekday())).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    booking = book(as_alice, pool, monday - timedelta(hours=3), monday + timedelta(hours=1))
    assert booking.status_code == 201, booking.content
    booking_id = booking.json()["id"]
    alice.memberships.filter(lab=vision_lab).update(max_hours_per_week=2)

    later = extend(as_alice, booking_id, monday + timedelta(hours=2))
    assert later.status_code == 200, later.content
    refused = extend(as_alice, booking_id, monday + timedelta(hours=3))
    assert_error(refused, 409, "member_hours_exceeded")


def test_an_extension_is_closed_only_by_blackouts_over_the_time_it_adds(
    as_alice, pool, quotas, tomorrow
):
    """A blackout set over a live booking leaves it as it is (bookings/blackouts.py: the site admin
    decides). So it must not refuse that booking's extension, which adds only [old end, new end):
    a maintenance window the booking already ran through (or was let keep) is no reason to stop
    it running on. A blackout over the added time still refuses."""
    booking = book(as_alice, pool, tomorrow, tomorrow + timedelta(hours=2))
    assert booking.status_code == 201, booking.content
    booking_id = booking.json()["id"]
    BlackoutFactory(pool=pool, start=tomorrow, end=tomorrow + timedelta(hours=1))

    later = extend(as_alice, booking_id, tomorrow + timedelta(hours=3))
    assert later.status_code == 200, later.content
    assert Booking.objects.get(pk=booking_id).end == tomorrow + timedelta(hours=3)

    BlackoutFactory(
        pool=pool, start=tomorrow + timedelta(hours=4), end=tomorrow + timedelta(hours=5)
    )
    refused = extend(as_alice, booking_id, tomorrow + timedelta(hours=5))
    assert_error(refused, 400, "blackout")
    assert Booking.objects.get(pk=booking_id).end == tomorrow + timedelta(hours=3)

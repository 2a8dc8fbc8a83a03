"""The free windows offered to a member respect their own limits in the lab (issue 14): a window
that check_member_limits would refuse is marked with that refusal, through the API too."""

from datetime import timedelta

import pytest

from labgpu.bookings.free_windows import member_free_windows

from .test_next_free_windows import reserve

pytestmark = pytest.mark.django_db

H = timedelta(hours=1)


def test_windows_over_the_weekly_hours_limit_are_marked_refused(
    alice, vision_lab, pool, mid_next_week
):
    membership = alice.memberships.get(lab=vision_lab)
    membership.max_hours_per_week = 3
    membership.save(update_fields=["max_hours_per_week"])
    start = mid_next_week  # a day either side stays in her week, whenever the test runs
    reserve(alice, pool, start, start + 2 * H)  # 2 of her 3 hours that week

    windows = member_free_windows(
        pool, user=alice, membership=membership, duration=2 * H, after=start
    )

    assert windows, "the pool has free windows"
    same_week = [w for w in windows if w.start < start + 24 * H]
    assert same_week
    for window in same_week:
        assert window.refused is not None
        assert window.refused.code == "member_hours_exceeded"


def test_windows_over_the_concurrency_limit_are_marked_refused(
    alice, vision_lab, pool, tomorrow, as_alice
):
    membership = alice.memberships.get(lab=vision_lab)
    membership.max_concurrent_bookings = 1
    membership.save(update_fields=["max_concurrent_bookings"])
    reserve(alice, pool, tomorrow, tomorrow + 4 * H)

    windows = member_free_windows(
        pool, user=alice, membership=membership, duration=H, after=tomorrow
    )
    overlapping = [w for w in windows if w.start < tomorrow + 4 * H]
    later = [w for w in windows if w.start >= tomorrow + 4 * H]
    assert overlapping and all(w.refused.code == "member_concurrency_exceeded" for w in overlapping)
    assert all(w.refused is None for w in later)

    # The API says the same, with the reason a person reads.
    response = as_alice.get(
        f"/api/v1/pools/{pool.pk}/free-windows/",
        {"after": tomorrow.isoformat(), "duration_minutes": 60, "lab": vision_lab.pk},
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert [w["refused"] and w["refused"]["code"] for w in body] == [
        w.refused and w.refused.code for w in windows
    ]
    assert "bookings at a time" in body[0]["refused"]["message"]


def test_a_member_without_limits_gets_every_window_unmarked(alice, vision_lab, pool, tomorrow):
    membership = alice.memberships.get(lab=vision_lab)
    reserve(alice, pool, tomorrow, tomorrow + 4 * H)
    windows = member_free_windows(
        pool, user=alice, membership=membership, duration=H, after=tomorrow
    )
    assert windows and all(w.refused is None for w in windows)


def test_bad_query_is_a_json_error_naming_the_field(as_alice, pool):
    response = as_alice.get(f"/api/v1/pools/{pool.pk}/free-windows/", {"duration_minutes": "x"})
    assert response.status_code == 400
    assert "duration_minutes" in response.json()["extra"]["fields"]

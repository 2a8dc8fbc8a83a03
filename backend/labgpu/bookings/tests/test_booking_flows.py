"""Approve, reject, cancel, extend, expire; availability and next free windows."""

from datetime import UTC, datetime, timedelta

import pytest

from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Booking
from labgpu.bookings.services import bookings_expire_stale_pending
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.catalog.tests.factories import BlackoutFactory, NodePoolFactory

pytestmark = pytest.mark.django_db


def create(client, pool, start, hours=1, **extra):
    response = client.post(
        "/api/v1/bookings/",
        {
            "pool": pool.pk,
            "start": start.isoformat(),
            "end": (start + timedelta(hours=hours)).isoformat(),
            **extra,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def approval_pool(instance_type):
    return NodePoolFactory(
        instance_type=instance_type, capacity=1, requires_approval=True, max_days_ahead=60
    )


def test_lab_admin_approves_a_pending_booking_and_it_is_audited(
    as_alice, as_bob, approval_pool, quotas, tomorrow
):
    booking = create(as_alice, approval_pool, tomorrow)
    assert booking["status"] == "pending"
    queue = as_bob.get("/api/v1/bookings/", {"status": "pending"}).json()
    assert [b["id"] for b in queue["results"]] == [booking["id"]]
    approved = as_bob.post(
        f"/api/v1/bookings/{booking['id']}/approve/", {"reason": "ok"}, format="json"
    )
    assert approved.status_code == 200
    assert approved.json()["status"] == "scheduled" and approved.json()["decided_by"] == "bob"
    again = as_bob.post(f"/api/v1/bookings/{booking['id']}/approve/")
    assert again.status_code == 409 and again.json()["code"] == "already_decided"
    assert AuditEvent.objects.filter(
        action="booking.approve", target_id=str(booking["id"])
    ).exists()


@pytest.mark.security
def test_lab_admin_cannot_approve_their_own_booking(
    as_bob, as_carol, approval_pool, quotas, tomorrow
):
    """Issue 11 item 16: the person who asked is never the one who approves (by default)."""
    booking = create(as_bob, approval_pool, tomorrow)
    refused = as_bob.post(f"/api/v1/bookings/{booking['id']}/approve/", {}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "self_approval"
    assert Booking.objects.get(pk=booking["id"]).status == "pending"
    assert not AuditEvent.objects.filter(
        action__in=["booking.approve", "booking.self_approve"]
    ).exists()
    approved = as_carol.post(f"/api/v1/bookings/{booking['id']}/approve/", {}, format="json")
    assert approved.status_code == 200 and approved.json()["decided_by"] == "carol"


@pytest.mark.security
def test_self_approval_allowed_by_setting_is_audited_as_self_approval(
    as_bob, approval_pool, quotas, tomorrow, settings
):
    settings.LABGPU_ALLOW_SELF_APPROVAL = True
    booking = create(as_bob, approval_pool, tomorrow)
    approved = as_bob.post(f"/api/v1/bookings/{booking['id']}/approve/", {}, format="json")
    assert approved.status_code == 200 and approved.json()["status"] == "scheduled"
    events = AuditEvent.objects.filter(
        target_id=str(booking["id"]), action__in=["booking.approve", "booking.self_approve"]
    )
    assert list(events.values_list("action", "data__self_approval")) == [
        ("booking.self_approve", True)
    ]


def test_rejection_needs_a_reason_and_frees_the_slot(
    as_alice, as_bob, approval_pool, quotas, tomorrow
):
    booking = create(as_alice, approval_pool, tomorrow)
    missing = as_bob.post(f"/api/v1/bookings/{booking['id']}/reject/", {}, format="json")
    assert missing.status_code == 400 and missing.json()["code"] == "reason_required"
    rejected = as_bob.post(
        f"/api/v1/bookings/{booking['id']}/reject/",
        {"reason": "Use the MI300X pool"},
        format="json",
    ).json()
    assert rejected["status"] == "rejected"
    assert rejected["decision_reason"] == "Use the MI300X pool"
    create(as_alice, approval_pool, tomorrow)  # the slot is free again


def test_stale_pending_bookings_expire_at_provisioning_time(
    as_alice, approval_pool, quotas, tomorrow
):
    booking = create(as_alice, approval_pool, tomorrow)
    assert bookings_expire_stale_pending() == 0
    Booking.objects.filter(pk=booking["id"]).update(
        reserved_start=datetime.fromisoformat(booking["start"]) - timedelta(days=2)
    )
    assert bookings_expire_stale_pending() == 1
    assert Booking.objects.get(pk=booking["id"]).status == "expired"
    assert AuditEvent.objects.filter(action="booking.expire").count() == 1


def test_cancel_before_start_frees_capacity(as_alice, pool, quotas, tomorrow):
    first = create(as_alice, pool, tomorrow)
    create(as_alice, pool, tomorrow)
    cancelled = as_alice.post(
        f"/api/v1/bookings/{first['id']}/cancel/", {"reason": "plans changed"}, format="json"
    ).json()
    assert cancelled["status"] == "cancelled" and cancelled["ended_by"] == "alice"
    create(as_alice, pool, tomorrow)
    twice = as_alice.post(f"/api/v1/bookings/{first['id']}/cancel/")
    assert twice.status_code == 409 and twice.json()["code"] == "invalid_status"


def test_cancelling_a_running_booking_ends_it_early(as_alice, pool, quotas, tomorrow):
    booking = create(as_alice, pool, tomorrow)
    Booking.objects.filter(pk=booking["id"]).update(status="ready")
    ended = as_alice.post(f"/api/v1/bookings/{booking['id']}/cancel/").json()
    assert ended["status"] == "ending"


def test_site_admin_force_end_is_audited(as_alice, as_carol, pool, quotas, tomorrow):
    booking = create(as_alice, pool, tomorrow)
    Booking.objects.filter(pk=booking["id"]).update(status="ready")
    assert (
        as_carol.post(
            f"/api/v1/bookings/{booking['id']}/cancel/", {"reason": "abuse"}, format="json"
        ).json()["status"]
        == "ending"
    )
    event = AuditEvent.objects.get(action="booking.force_end")
    assert event.actor.username == "carol" and event.data["reason"] == "abuse"


def test_extend_while_capacity_allows(as_alice, as_bob, instance_type, quotas, tomorrow):
    pool = NodePoolFactory(
        instance_type=instance_type,
        capacity=1,
        teardown_grace_minutes=0,
        provisioning_lead_minutes=0,
    )
    booking = create(as_alice, pool, tomorrow, hours=1)
    create(as_bob, pool, tomorrow + timedelta(hours=3))
    longer = as_alice.post(
        f"/api/v1/bookings/{booking['id']}/extend/",
        {"end": (tomorrow + timedelta(hours=3)).isoformat()},
        format="json",
    )
    assert longer.status_code == 200, longer.content
    assert datetime.fromisoformat(longer.json()["end"]) == tomorrow + timedelta(hours=3)
    blocked = as_alice.post(
        f"/api/v1/bookings/{booking['id']}/extend/",
        {"end": (tomorrow + timedelta(hours=4)).isoformat()},
        format="json",
    )
    assert blocked.status_code == 409 and blocked.json()["code"] == "pool_full"
    shorter = as_alice.post(
        f"/api/v1/bookings/{booking['id']}/extend/",
        {"end": (tomorrow + timedelta(hours=2)).isoformat()},
        format="json",
    )
    assert shorter.status_code == 400 and shorter.json()["code"] == "end_not_later"


def test_fragmented_pool_is_repacked_instead_of_refusing(
    as_alice, as_bob, instance_type, quotas, tomorrow
):
    """Two slots: [0,1h) and [2h,3h) land in different slots only if needed; a booking [0.5h,
    2.5h) overlaps each at a different time, so capacity exists at every instant."""
    pool = NodePoolFactory(
        instance_type=instance_type,
        capacity=2,
        teardown_grace_minutes=0,
        provisioning_lead_minutes=0,
    )
    a = create(as_alice, pool, tomorrow, hours=1)
    b = create(as_alice, pool, tomorrow + timedelta(hours=2), hours=1)
    blocker = create(as_bob, pool, tomorrow + timedelta(minutes=30), hours=1)  # [0.5h, 1.5h)
    Booking.objects.filter(pk=b["id"]).update(slot=1 - Booking.objects.get(pk=a["id"]).slot)
    Booking.objects.filter(pk=blocker["id"]).update(status="cancelled")
    # Now slot X holds [0,1h) and slot Y holds [2h,3h): no single slot is free over [0.5h, 2.5h).
    fitted = create(as_bob, pool, tomorrow + timedelta(minutes=30), hours=2)
    live = Booking.objects.filter(pool=pool, status="scheduled")
    slots = {row.pk: row.slot for row in live}
    assert slots[fitted["id"]] != slots[a["id"]] and slots[fitted["id"]] != slots[b["id"]]


def test_availability_shows_free_capacity_and_next_windows(as_alice, pool, quotas, tomorrow):
    create(as_alice, pool, tomorrow, hours=2)
    BlackoutFactory(
        pool=pool, start=tomorrow + timedelta(hours=6), end=tomorrow + timedelta(hours=8)
    )
    response = as_alice.get(
        f"/api/v1/pools/{pool.pk}/availability/",
        {
            "start": tomorrow.isoformat(),
            "end": (tomorrow + timedelta(hours=10)).isoformat(),
            "duration_minutes": 60,
        },
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["capacity"] == 2
    first = body["intervals"][0]
    assert first["used"] == 1 and first["free"] == 1
    assert any(i["blackout"] and i["free"] == 0 for i in body["intervals"])
    assert body["next_free"][0]["start"].startswith(tomorrow.strftime("%Y-%m-%dT%H:%M"))


@pytest.fixture
def week_pool(instance_type):
    """Approval required, bookings up to 7 days, one node."""
    return NodePoolFactory(
        instance_type=instance_type,
        capacity=1,
        requires_approval=True,
        max_duration_minutes=7 * 24 * 60,
        max_days_ahead=60,
    )


def extend(client, booking, end):
    return client.post(
        f"/api/v1/bookings/{booking['id']}/extend/", {"end": end.isoformat()}, format="json"
    )


def approved(as_alice, as_bob, pool, start, hours=1):
    booking = create(as_alice, pool, start, hours=hours)
    response = as_bob.post(f"/api/v1/bookings/{booking['id']}/approve/", {}, format="json")
    assert response.json()["status"] == "scheduled", response.content
    return booking


def test_extending_an_approved_booking_needs_approval_again(
    as_alice, as_bob, as_mallory, week_pool, quotas, tomorrow
):
    """Issue 13: an approved 1-hour booking extended to 7 days must not silently run 7 days."""
    booking = approved(as_alice, as_bob, week_pool, tomorrow)
    week_later = tomorrow + timedelta(days=7)

    asked = extend(as_alice, booking, week_later)

    assert asked.status_code == 200, asked.content
    row = Booking.objects.get(pk=booking["id"])
    assert (row.status, row.end, row.pending_end) == (
        "scheduled",
        tomorrow + timedelta(hours=1),
        week_later,
    )
    assert asked.json()["pending_end"] == week_later.isoformat().replace("+00:00", "Z")
    # The asked time is held: nobody else gets the node meanwhile.
    assert row.reserved_end == week_later + timedelta(minutes=week_pool.teardown_grace_minutes)
    taken = as_alice.post(
        "/api/v1/bookings/",
        {
            "pool": week_pool.pk,
            "start": (tomorrow + timedelta(days=2)).isoformat(),
            "end": (tomorrow + timedelta(days=2, hours=1)).isoformat(),
        },
        format="json",
    )
    assert taken.status_code == 409 and taken.json()["code"] == "pool_full"
    # The lab admins see it in their queue; another lab does not.
    queue = as_bob.get("/api/v1/bookings/", {"awaiting_decision": "true"}).json()
    assert [b["id"] for b in queue["results"]] == [booking["id"]]
    assert as_mallory.get("/api/v1/bookings/", {"awaiting_decision": "true"}).json()["count"] == 0
    assert AuditEvent.objects.filter(
        action="booking.extension_request", target_id=str(booking["id"])
    ).exists()

    decided = as_bob.post(f"/api/v1/bookings/{booking['id']}/approve/", {}, format="json")

    assert decided.status_code == 200, decided.content
    row.refresh_from_db()
    assert (row.status, row.end, row.pending_end) == ("scheduled", week_later, None)
    assert AuditEvent.objects.filter(
        action="booking.extension_approve", target_id=str(booking["id"]), actor__username="bob"
    ).exists()
    assert as_bob.get("/api/v1/bookings/", {"awaiting_decision": "true"}).json()["count"] == 0


def test_a_rejected_extension_keeps_the_approved_end_and_frees_the_held_time(
    as_alice,
    as_bob,
    alice,
    week_pool,
    quotas,
    tomorrow,
    mailoutbox,
    django_capture_on_commit_callbacks,
):
    booking = approved(as_alice, as_bob, week_pool, tomorrow)
    assert extend(as_alice, booking, tomorrow + timedelta(days=3)).status_code == 200
    missing = as_bob.post(f"/api/v1/bookings/{booking['id']}/reject/", {}, format="json")
    assert missing.status_code == 400 and missing.json()["code"] == "reason_required"

    with django_capture_on_commit_callbacks(execute=True):
        rejected = as_bob.post(
            f"/api/v1/bookings/{booking['id']}/reject/", {"reason": "Not this week"}, format="json"
        )

    assert rejected.status_code == 200, rejected.content
    row = Booking.objects.get(pk=booking["id"])
    assert (row.status, row.end, row.pending_end) == (
        "scheduled",
        tomorrow + timedelta(hours=1),
        None,
    )
    assert row.reserved_end == row.end + timedelta(minutes=week_pool.teardown_grace_minutes)
    assert [(m.to, "was not extended" in m.subject) for m in mailoutbox] == [([alice.email], True)]
    create(as_alice, week_pool, tomorrow + timedelta(days=1))  # the held time is free again
    assert AuditEvent.objects.filter(
        action="booking.extension_reject", target_id=str(booking["id"])
    ).exists()
    again = as_bob.post(f"/api/v1/bookings/{booking['id']}/approve/", {}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "already_decided"


def test_an_extension_is_approved_only_while_the_quota_still_allows_it(
    as_alice, as_bob, week_pool, quotas, mid_next_month
):
    booking = approved(as_alice, as_bob, week_pool, mid_next_month)
    assert extend(as_alice, booking, mid_next_month + timedelta(days=2)).status_code == 200
    for quota in quotas:  # meanwhile the lab's quota shrank
        quota.gpu_hours = 10
        quota.save()

    refused = as_bob.post(f"/api/v1/bookings/{booking['id']}/approve/", {}, format="json")

    assert refused.status_code == 409 and refused.json()["code"] == "quota_exceeded"
    row = Booking.objects.get(pk=booking["id"])
    assert (row.end, row.pending_end) == (
        mid_next_month + timedelta(hours=1),
        mid_next_month + timedelta(days=2),
    )


def test_a_lab_admin_extends_a_members_approved_booking_directly(
    as_alice, as_bob, week_pool, quotas, tomorrow
):
    booking = approved(as_alice, as_bob, week_pool, tomorrow)
    longer = extend(as_bob, booking, tomorrow + timedelta(hours=5))
    assert longer.status_code == 200, longer.content
    row = Booking.objects.get(pk=booking["id"])
    assert (row.end, row.pending_end) == (tomorrow + timedelta(hours=5), None)


def test_a_pending_booking_extends_at_once_and_is_approved_as_a_whole(
    as_alice, as_bob, week_pool, quotas, tomorrow
):
    booking = create(as_alice, week_pool, tomorrow)
    assert extend(as_alice, booking, tomorrow + timedelta(days=2)).status_code == 200
    row = Booking.objects.get(pk=booking["id"])
    assert (row.status, row.end, row.pending_end) == ("pending", tomorrow + timedelta(days=2), None)


def test_calendar_list_holds_the_pools_bookings_that_overlap_the_window(
    as_alice, alice, vision_lab, mallory, other_lab, pool, instance_type
):
    # [09:00, 17:00) of a day; bookings touching its edges from outside are not in it.
    day = datetime(2030, 1, 7, tzinfo=UTC)
    lo, hi = day + timedelta(hours=9), day + timedelta(hours=17)
    other_pool = NodePoolFactory(instance_type=instance_type)

    def booking(start_h, end_h, **extra):
        extra = {"user": alice, "lab": vision_lab, "pool": pool, **extra}
        start, end = day + timedelta(hours=start_h), day + timedelta(hours=end_h)
        return BookingFactory(start=start, end=end, **extra).pk

    ends_at_lo = booking(7, 9, slot=2)
    starts_at_hi = booking(17, 18, slot=3)
    across_lo = booking(8, 10)
    inside_cancelled = booking(11, 12, status=Booking.Status.CANCELLED)
    across_all = booking(6, 20, slot=1)
    across_hi = booking(16, 19)
    booking(11, 12, pool=other_pool)  # another pool
    booking(11, 12, user=mallory, lab=other_lab)  # another lab: not alice's to list

    def listed(**params):
        response = as_alice.get("/api/v1/bookings/", {"pool": pool.pk, **params})
        assert response.status_code == 200, response.content
        return [row["id"] for row in response.json()["results"]]

    window = {"start_after": lo.isoformat(), "end_before": hi.isoformat()}
    assert listed(**window) == [across_all, across_lo, inside_cancelled, across_hi]
    # Each bound alone, and a window of no length or inverted, as the two comparisons say.
    assert listed(start_after=lo.isoformat()) == [
        across_all, across_lo, inside_cancelled, across_hi, starts_at_hi
    ]  # fmt: skip
    assert listed(end_before=hi.isoformat()) == [
        across_all, ends_at_lo, across_lo, inside_cancelled, across_hi
    ]  # fmt: skip
    noon = (day + timedelta(hours=12)).isoformat()
    assert listed(start_after=noon, end_before=noon) == [across_all]
    assert listed(start_after=hi.isoformat(), end_before=lo.isoformat()) == [across_all]

"""The approval queue (issue 14): extension requests beside new bookings, each with its quota
impact and conflicts; bulk decisions, each audited, with per-item errors; the decision history."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Booking
from labgpu.bookings.tests.test_booking_flows import create, extend
from labgpu.catalog.tests.factories import BlackoutFactory, NodePoolFactory
from labgpu.core.timeutils import month_start, next_month, now
from labgpu.quotas.models import Quota

pytestmark = pytest.mark.django_db


@pytest.fixture
def approval_pool(instance_type):
    return NodePoolFactory(
        instance_type=instance_type,
        capacity=2,
        requires_approval=True,
        max_duration_minutes=7 * 24 * 60,
        max_days_ahead=60,
    )


def test_queue_lists_extension_requests_with_quota_before_and_after(
    as_alice, as_bob, as_mallory, approval_pool, quotas, mid_next_month
):
    new = create(as_alice, approval_pool, mid_next_month, hours=2)
    later = mid_next_month + timedelta(days=2)
    running = create(as_alice, approval_pool, later, hours=1)
    assert as_bob.post(f"/api/v1/bookings/{running['id']}/approve/").status_code == 200
    assert extend(as_alice, running, later + timedelta(hours=4)).status_code == 200
    BlackoutFactory(
        pool=approval_pool, start=later + timedelta(hours=3), end=later + timedelta(hours=5)
    )
    Quota.objects.filter(month=month_start(mid_next_month)).update(gpu_hours=Decimal(100))

    queue = as_bob.get("/api/v1/bookings/approval-queue/")

    assert queue.status_code == 200, queue.content
    items = {item["booking"]["id"]: item for item in queue.json()}
    assert set(items) == {new["id"], running["id"]}
    fresh, ext = items[new["id"]], items[running["id"]]
    assert fresh["is_extension"] is False and ext["is_extension"] is True
    # Both hold their time already; "before" leaves out what the decision is about.
    assert fresh["quota"][0] == {
        "month": month_start(mid_next_month).isoformat(),
        "limit_gpu_hours": "100.00",
        "used_before": "1.00",  # the other booking's approved hour (its extension is undecided)
        "used_after": "3.00",
        "exceeds": False,
    }
    assert (ext["quota"][0]["used_before"], ext["quota"][0]["used_after"]) == ("3.00", "6.00")
    assert [b["reason"] for b in ext["blackouts"]] == [
        BlackoutFactory._meta.model.objects.get().reason
    ]
    assert fresh["blackouts"] == [] and fresh["capacity_free"] is True
    assert as_mallory.get("/api/v1/bookings/approval-queue/").json() == []


def test_an_extension_request_shows_the_quota_months_and_blackouts_of_the_time_it_adds(
    as_alice, as_bob, vision_lab, instance_type, quotas
):
    """The approval judges an extension only from the current end on (snapshot.Ask.added_from):
    the queue shows the lab admin that, not last month's spent quota or a maintenance window the
    booking was let keep, which read as reasons to refuse."""
    pool = NodePoolFactory(
        instance_type=instance_type, capacity=2, requires_approval=True, max_days_ahead=100
    )
    first = next_month(month_start(now()))
    second = next_month(first)
    boundary = datetime(second.year, second.month, 1, tzinfo=UTC)
    booking = create(as_alice, pool, boundary - timedelta(hours=2), hours=3)
    assert as_bob.post(f"/api/v1/bookings/{booking['id']}/approve/").status_code == 200
    assert extend(as_alice, booking, boundary + timedelta(hours=3)).status_code == 200
    BlackoutFactory(
        pool=pool, start=boundary - timedelta(hours=2), end=boundary - timedelta(hours=1)
    )
    Quota.objects.filter(lab=vision_lab, month=first).update(gpu_hours=0)

    [item] = as_bob.get("/api/v1/bookings/approval-queue/").json()

    assert item["is_extension"] is True
    assert [(q["month"], q["exceeds"]) for q in item["quota"]] == [(second.isoformat(), False)]
    assert item["blackouts"] == []
    # And the approval agrees with what it showed.
    assert as_bob.post(f"/api/v1/bookings/{booking['id']}/approve/").status_code == 200
    assert Booking.objects.get(pk=booking["id"]).end == boundary + timedelta(hours=3)


def test_bulk_reject_decides_each_audits_each_and_reports_the_ones_it_could_not(
    as_alice, as_bob, approval_pool, quotas, tomorrow
):
    first = create(as_alice, approval_pool, tomorrow)
    second = create(as_alice, approval_pool, tomorrow + timedelta(hours=3))
    decided = create(as_alice, approval_pool, tomorrow + timedelta(hours=6))
    assert as_bob.post(f"/api/v1/bookings/{decided['id']}/approve/").status_code == 200

    response = as_bob.post(
        "/api/v1/bookings/decide/",
        {
            "ids": [first["id"], second["id"], decided["id"], 999999],
            "decision": "reject",
            "reason": "no budget",
        },
        format="json",
    )

    assert response.status_code == 200, response.content
    results = {r["id"]: r for r in response.json()["results"]}
    assert results[first["id"]]["ok"] and results[first["id"]]["booking"]["status"] == "rejected"
    assert results[second["id"]]["ok"]
    assert (results[decided["id"]]["ok"], results[decided["id"]]["code"]) == (
        False,
        "already_decided",
    )
    assert (results[999999]["ok"], results[999999]["code"]) == (False, "not_found")
    assert set(Booking.objects.filter(status="rejected").values_list("pk", flat=True)) == {
        first["id"],
        second["id"],
    }
    audited = AuditEvent.objects.filter(action="booking.reject", actor__username="bob")
    assert sorted(int(e.target_id) for e in audited) == sorted([first["id"], second["id"]])
    assert {e.data["reason"] for e in audited} == {"no budget"}


def test_bulk_decisions_need_ids_and_a_reason_to_reject(as_bob):
    no_reason = as_bob.post(
        "/api/v1/bookings/decide/", {"ids": [1], "decision": "reject"}, format="json"
    )
    assert no_reason.status_code == 400 and "reason" in no_reason.json()["extra"]["fields"]
    empty = as_bob.post(
        "/api/v1/bookings/decide/", {"ids": [], "decision": "approve"}, format="json"
    )
    assert empty.status_code == 400 and "ids" in empty.json()["extra"]["fields"]
    odd = as_bob.post(
        "/api/v1/bookings/decide/", {"ids": ["x"], "decision": "maybe"}, format="json"
    )
    assert odd.status_code == 400 and {"ids", "decision"} <= set(odd.json()["extra"]["fields"])


def test_decision_history_reads_several_actions_from_the_audit_log(
    as_alice, as_bob, as_mallory, approval_pool, quotas, tomorrow
):
    one = create(as_alice, approval_pool, tomorrow)
    two = create(as_alice, approval_pool, tomorrow + timedelta(hours=3))
    as_bob.post(f"/api/v1/bookings/{one['id']}/approve/", {"reason": "fine"}, format="json")
    as_bob.post(f"/api/v1/bookings/{two['id']}/reject/", {"reason": "too long"}, format="json")

    history = as_bob.get("/api/v1/audit/", {"action": "booking.approve,booking.reject"}).json()

    rows = [
        (e["action"], e["target_id"], e["actor"], e["data"]["reason"]) for e in history["results"]
    ]
    assert rows == [
        ("booking.reject", str(two["id"]), "bob", "too long"),
        ("booking.approve", str(one["id"]), "bob", "fine"),
    ]
    assert as_mallory.get("/api/v1/audit/", {"action": "booking.approve"}).json()["count"] == 0

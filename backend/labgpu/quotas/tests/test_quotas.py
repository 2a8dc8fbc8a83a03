from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest

from labgpu.accounts.tests.factories import LabFactory
from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Booking
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.core.timeutils import month_start, now
from labgpu.quotas.models import Quota
from labgpu.quotas.selectors import quota_usage

pytestmark = pytest.mark.django_db


def test_quota_shows_used_committed_and_remaining(
    as_alice, pool, quotas, mid_next_month, instance_type
):
    as_alice.post(
        "/api/v1/bookings/",
        {
            "pool": pool.pk,
            "start": mid_next_month.isoformat(),
            "end": (mid_next_month + timedelta(hours=3)).isoformat(),
        },
        format="json",
    )
    done = as_alice.post(
        "/api/v1/bookings/",
        {
            "pool": pool.pk,
            "start": (mid_next_month + timedelta(hours=5)).isoformat(),
            "end": (mid_next_month + timedelta(hours=7)).isoformat(),
        },
        format="json",
    ).json()
    Booking.objects.filter(pk=done["id"]).update(
        status="completed", consumed_gpu_hours=Decimal("1.5")
    )
    month = mid_next_month.date().replace(day=1).isoformat()
    rows = as_alice.get("/api/v1/quotas/", {"month": month}).json()["results"]
    assert len(rows) == 1
    assert rows[0]["gpu_hours"] == "1000.00"
    assert rows[0]["committed_gpu_hours"] == "3.00"
    assert rows[0]["used_gpu_hours"] == "1.50"
    assert rows[0]["remaining_gpu_hours"] == "995.50"


def test_quota_request_flow(as_bob, as_carol, as_alice, vision_lab, instance_type, quotas):
    month = month_start(now()).isoformat()
    body = {
        "lab": vision_lab.pk,
        "instance_type": instance_type.pk,
        "month": month,
        "gpu_hours": "250",
        "reason": "Paper deadline",
    }
    refused = as_alice.post("/api/v1/quota-requests/", body, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "not_lab_admin"
    created = as_bob.post("/api/v1/quota-requests/", body, format="json")
    assert created.status_code == 201, created.content
    request_id = created.json()["id"]
    assert (
        as_bob.post(f"/api/v1/quota-requests/{request_id}/approve/").json()["code"]
        == "not_site_admin"
    )
    approved = as_carol.post(
        f"/api/v1/quota-requests/{request_id}/approve/", {"reason": "Granted"}, format="json"
    )
    assert approved.json()["status"] == "approved"
    quota = Quota.objects.get(lab=vision_lab, instance_type=instance_type, month=month)
    assert quota.gpu_hours == Decimal("1250")
    again = as_carol.post(
        f"/api/v1/quota-requests/{request_id}/reject/", {"reason": "x"}, format="json"
    )
    assert again.status_code == 409
    assert AuditEvent.objects.filter(action="quota_request.approve").count() == 1


def test_rejecting_a_quota_request_needs_a_reason(as_bob, as_carol, vision_lab, instance_type):
    month = month_start(now()).isoformat()
    created = as_bob.post(
        "/api/v1/quota-requests/",
        {
            "lab": vision_lab.pk,
            "instance_type": instance_type.pk,
            "month": month,
            "gpu_hours": "10",
        },
        format="json",
    ).json()
    response = as_carol.post(f"/api/v1/quota-requests/{created['id']}/reject/", {}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "reason_required"
    rejected = as_carol.post(
        f"/api/v1/quota-requests/{created['id']}/reject/", {"reason": "Budget spent"}, format="json"
    ).json()
    assert rejected["status"] == "rejected" and rejected["decision_reason"] == "Budget spent"


def test_site_admin_sets_a_quota_and_it_is_audited(as_carol, as_bob, vision_lab, instance_type):
    body = {
        "lab": vision_lab.pk,
        "instance_type": instance_type.pk,
        "month": month_start(now()).isoformat(),
        "gpu_hours": "42",
    }
    assert as_bob.post("/api/v1/quotas/", body, format="json").status_code == 403
    response = as_carol.post("/api/v1/quotas/", body, format="json")
    assert response.status_code == 201 and response.json()["gpu_hours"] == "42.00"
    assert AuditEvent.objects.filter(action="quota.set").exists()


def test_quota_usage_counts_only_the_hours_inside_the_month(vision_lab, alice, pool):
    """The month is [first, next first): bookings that only touch a bound add nothing, one that
    spans it adds its hours inside; other labs, other statuses and excluded bookings add nothing."""
    begin, end = datetime(2030, 3, 1, tzinfo=UTC), datetime(2030, 4, 1, tzinfo=UTC)
    hour = timedelta(hours=1)

    def book(start, finish, status=Booking.Status.SCHEDULED, lab=vision_lab, slot=0):
        return BookingFactory(
            lab=lab, user=alice, pool=pool, start=start, end=finish, status=status, slot=slot
        )

    book(begin - 2 * hour, begin)  # ends as the month begins
    book(end, end + 2 * hour)  # starts as the month ends
    book(begin - hour, begin + 3 * hour, slot=1)  # 3 h inside
    book(end - 2 * hour, end + 5 * hour, slot=1)  # 2 h inside
    book(begin + 10 * hour, begin + 14 * hour, status=Booking.Status.CANCELLED)
    excluded = book(begin + 20 * hour, begin + 21 * hour)
    other = book(begin + 30 * hour, begin + 31 * hour)
    Booking.objects.filter(pk=other.pk).update(lab=LabFactory(slug="elsewhere"))
    usage = quota_usage(
        lab_id=vision_lab.pk,
        instance_type_id=pool.instance_type_id,
        month=date(2030, 3, 1),
        exclude_booking_id=excluded.pk,
    )
    assert usage.committed == Decimal("5.00")
    assert usage.used == Decimal("0.00")


def test_metered_usage_is_read_in_a_fixed_number_of_statements(
    pool, vision_lab, instance_type, django_assert_max_num_queries
):
    """The month's metered bookings are apportioned from one read, whatever their number: each
    needs its GPU count too (a deferred field read per booking made the quotas page slow)."""
    start = datetime(2030, 1, 1, 10, tzinfo=UTC)
    for day in range(6):
        BookingFactory(
            lab=vision_lab,
            pool=pool,
            start=start + timedelta(days=day),
            gpu_count=2,
            status=Booking.Status.COMPLETED,
            consumed_gpu_hours=Decimal("1.50"),
        )
    with django_assert_max_num_queries(3):
        usage = quota_usage(
            lab_id=vision_lab.pk, instance_type_id=instance_type.pk, month=date(2030, 1, 1)
        )
    assert usage.used == Decimal("9.00")

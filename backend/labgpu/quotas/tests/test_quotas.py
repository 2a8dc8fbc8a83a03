from datetime import timedelta
from decimal import Decimal

import pytest

from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Booking
from labgpu.core.timeutils import month_start, now
from labgpu.quotas.models import Quota

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

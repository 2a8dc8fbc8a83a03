"""A blackout created over live bookings (issue 14 bug 12): the site admin sees which, their
owners are emailed, nothing about the bookings changes until someone cancels them, audited."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core import mail

from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Booking

pytestmark = pytest.mark.django_db


def booking_at(user, lab, pool, start, hours=2, *, status="scheduled", slot=0):
    return Booking.objects.create(
        user=user,
        lab=lab,
        pool=pool,
        start=start,
        end=start + timedelta(hours=hours),
        status=status,
        slot=slot,
        reserved_start=start,
        reserved_end=start + timedelta(hours=hours),
        gpu_count=1,
        price_per_hour=Decimal("1.99"),
    )


def test_a_blackout_over_bookings_lists_them_emails_their_owners_and_leaves_them_be(
    as_carol,
    carol,
    alice,
    mallory,
    vision_lab,
    other_lab,
    pool,
    tomorrow,
    django_capture_on_commit_callbacks,
):
    inside = booking_at(alice, vision_lab, pool, tomorrow)
    other_lab_inside = booking_at(mallory, other_lab, pool, tomorrow + timedelta(hours=1), slot=1)
    booking_at(alice, vision_lab, pool, tomorrow + timedelta(hours=8))  # after the blackout
    booking_at(alice, vision_lab, pool, tomorrow, status="cancelled", slot=2)  # not live
    mail.outbox = []

    with django_capture_on_commit_callbacks(execute=True):
        response = as_carol.post(
            "/api/v1/blackouts/",
            {
                "pool": pool.pk,
                "start": (tomorrow + timedelta(minutes=30)).isoformat(),
                "end": (tomorrow + timedelta(hours=4)).isoformat(),
                "reason": "Firmware update",
            },
            format="json",
        )

    assert response.status_code == 201, response.content
    body = response.json()
    assert [c["id"] for c in body["clashes"]] == [inside.pk, other_lab_inside.pk]
    assert body["clashes"][1]["user"] == "mallory"
    assert sorted(m.to[0] for m in mail.outbox) == sorted([alice.email, mallory.email])
    assert all("Firmware update" in m.body for m in mail.outbox)
    assert (
        Booking.objects.filter(pk__in=[inside.pk, other_lab_inside.pk], status="scheduled").count()
        == 2
    )
    event = AuditEvent.objects.get(action="blackout.create")
    assert event.actor == carol and event.data["clashing_bookings"] == [
        inside.pk,
        other_lab_inside.pk,
    ]

    clashes = as_carol.get(f"/api/v1/blackouts/{body['id']}/clashes/")
    assert [c["id"] for c in clashes.json()] == [inside.pk, other_lab_inside.pk]


def test_only_site_admins_see_whom_a_blackout_affects(
    as_alice, as_carol, alice, vision_lab, pool, tomorrow
):
    booking_at(alice, vision_lab, pool, tomorrow)
    created = as_carol.post(
        "/api/v1/blackouts/",
        {
            "pool": pool.pk,
            "start": tomorrow.isoformat(),
            "end": (tomorrow + timedelta(hours=1)).isoformat(),
        },
        format="json",
    ).json()
    assert as_alice.get(f"/api/v1/blackouts/{created['id']}/clashes/").status_code == 403

"""The in-app list of what a person was e-mailed (issue 14 researcher item 5): every e-mail about
a booking is kept for its recipient, listed only to them, and can be marked read."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core import mail
from rest_framework.test import APIClient

from labgpu.bookings import notifications
from labgpu.bookings.models import Booking, Notification

pytestmark = pytest.mark.django_db

START = datetime(2026, 12, 1, 7, tzinfo=UTC)


def booking_of(user, lab, pool):
    return Booking.objects.create(
        user=user, lab=lab, pool=pool, start=START, end=START + timedelta(hours=2),
        status="scheduled", slot=0, reserved_start=START, reserved_end=START + timedelta(hours=2),
        gpu_count=1, price_per_hour=Decimal("1.99"), decision_reason="ok",
    )  # fmt: skip


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_every_booking_email_is_kept_for_its_recipient_with_the_booking(alice, vision_lab, pool):
    booking = booking_of(alice, vision_lab, pool)
    mail.outbox = []

    notifications.booking_decided(booking)
    notifications.booking_ending_soon(booking)

    sent = {m.subject for m in mail.outbox}
    kept = Notification.objects.filter(user=alice)
    assert {n.subject for n in kept} == sent and len(sent) == 2
    assert {n.booking_id for n in kept} == {booking.pk}
    assert all(n.read_at is None for n in kept)


def test_a_person_lists_and_reads_only_their_own_notifications(alice, mallory, vision_lab, pool):
    notifications.booking_failed(booking_of(alice, vision_lab, pool))
    theirs = Notification.objects.create(user=mallory, subject="not for alice")
    client = client_for(alice)

    unread = client.get("/api/v1/notifications/?unread=true").json()
    assert unread["count"] == 1
    (item,) = unread["results"]
    assert item["booking"] is not None and "failed" in item["subject"]

    assert client.post(f"/api/v1/notifications/{theirs.pk}/read/").status_code == 404
    assert client.post(f"/api/v1/notifications/{item['id']}/read/").json() == {"marked": 1}
    assert client.get("/api/v1/notifications/?unread=true").json()["count"] == 0
    assert client.get("/api/v1/notifications/").json()["count"] == 1
    theirs.refresh_from_db()
    assert theirs.read_at is None
    assert client_for(mallory).post("/api/v1/notifications/read-all/").json() == {"marked": 1}

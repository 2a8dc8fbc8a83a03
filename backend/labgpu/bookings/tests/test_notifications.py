"""Emails about bookings: times in the recipient's zone named without ambiguity, in their
language, with a link to the booking (issue 14 bug 15)."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core import mail

from labgpu.bookings import notifications
from labgpu.bookings.models import Booking

pytestmark = pytest.mark.django_db

START = datetime(2026, 12, 1, 7, tzinfo=UTC)  # 15:00 in Shanghai, 02:00 in Toronto


def booking_of(user, lab, pool, *, status="scheduled"):
    return Booking.objects.create(
        user=user,
        lab=lab,
        pool=pool,
        start=START,
        end=START + timedelta(hours=2),
        status=status,
        slot=0,
        reserved_start=START,
        reserved_end=START + timedelta(hours=2),
        gpu_count=1,
        price_per_hour=Decimal("1.99"),
        decision_reason="ok",
    )


def test_a_shanghai_researcher_reads_her_zone_by_name_and_offset_in_chinese(
    alice, vision_lab, pool, settings
):
    settings.LABGPU_PUBLIC_URL = "https://labgpu.example.org/"
    alice.timezone, alice.language = "Asia/Shanghai", "zh-hans"
    alice.save(update_fields=["timezone", "language"])
    booking = booking_of(alice, vision_lab, pool)
    mail.outbox = []

    notifications.booking_decided(booking)

    (message,) = mail.outbox
    assert message.subject == f"您的预约 #{booking.pk} 已获批准"
    assert "2026-12-01 15:00（Asia/Shanghai，UTC+08:00）" in message.body
    assert "CST" not in message.body
    assert f"https://labgpu.example.org/bookings/{booking.pk}" in message.body


def test_an_english_reader_gets_english_and_the_offset_of_that_date(bob, vision_lab, pool):
    bob.timezone, bob.language = "America/Toronto", "en"
    bob.save(update_fields=["timezone", "language"])
    booking = booking_of(bob, vision_lab, pool)
    mail.outbox = []

    notifications.booking_ending_soon(booking)

    (message,) = mail.outbox
    # December: Eastern Standard Time, five hours behind UTC.
    assert (
        message.subject
        == f"Booking #{booking.pk} ends at 2026-12-01 04:00 (America/Toronto, UTC-05:00)"
    )
    assert f"/bookings/{booking.pk}" in message.body
    assert "EST" not in message.subject + message.body

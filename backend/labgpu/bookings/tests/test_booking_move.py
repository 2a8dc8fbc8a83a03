"""Moving a booking not yet started (issue 14: a blackout's clashes can be moved, not only
cancelled): every booking rule runs again, the booking itself excluded; refused moves change
nothing; audited; the owner hears of it when someone else moved it."""

from datetime import timedelta

import pytest
from django.core import mail

from conftest import client_for
from labgpu.accounts.tests.factories import MembershipFactory, UserFactory
from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Booking
from labgpu.bookings.tests.test_blackouts import booking_at
from labgpu.catalog.models import Blackout

pytestmark = pytest.mark.django_db


def times(booking: Booking) -> tuple:
    booking.refresh_from_db()
    return booking.start, booking.end, booking.reserved_start, booking.reserved_end, booking.status


def move(client, booking, start, end):
    return client.post(
        f"/api/v1/bookings/{booking.pk}/move/",
        {"start": start.isoformat(), "end": end.isoformat()},
        format="json",
    )


def test_a_site_admin_moves_a_booking_onto_a_free_window_audited_and_the_owner_told(
    as_carol, carol, alice, vision_lab, pool, quotas, tomorrow, django_capture_on_commit_callbacks
):
    booking = booking_at(alice, vision_lab, pool, tomorrow)
    # Its own old times overlap the new ones: it must not clash with itself.
    new_start, new_end = tomorrow + timedelta(hours=1), tomorrow + timedelta(hours=3)
    mail.outbox = []

    with django_capture_on_commit_callbacks(execute=True):
        response = move(as_carol, booking, new_start, new_end)

    assert response.status_code == 200, response.content
    booking.refresh_from_db()
    assert (booking.start, booking.end) == (new_start, new_end)
    lead = timedelta(minutes=pool.provisioning_lead_minutes)
    grace = timedelta(minutes=pool.teardown_grace_minutes)
    assert (booking.reserved_start, booking.reserved_end) == (new_start - lead, new_end + grace)
    assert booking.status == "scheduled"
    event = AuditEvent.objects.get(action="booking.move")
    assert event.actor == carol
    assert event.data["from"] == {
        "start": tomorrow.isoformat(),
        "end": (tomorrow + timedelta(hours=2)).isoformat(),
    }
    assert event.data["to"] == {"start": new_start.isoformat(), "end": new_end.isoformat()}
    assert [m.to[0] for m in mail.outbox] == [alice.email]
    assert "moved" in mail.outbox[0].subject


def test_moving_into_a_blackout_is_refused_and_changes_nothing(
    as_alice, alice, vision_lab, pool, quotas, tomorrow
):
    booking = booking_at(alice, vision_lab, pool, tomorrow)
    Blackout.objects.create(
        pool=pool, start=tomorrow + timedelta(hours=5), end=tomorrow + timedelta(hours=9)
    )
    before = times(booking)

    response = move(as_alice, booking, tomorrow + timedelta(hours=6), tomorrow + timedelta(hours=8))

    assert response.status_code == 400, response.content
    assert response.json()["code"] == "blackout"
    assert times(booking) == before
    assert not AuditEvent.objects.filter(action="booking.move").exists()


def test_moving_onto_a_full_pool_is_refused_with_next_free_and_changes_nothing(
    as_alice, alice, mallory, vision_lab, other_lab, pool, quotas, tomorrow
):
    booking = booking_at(alice, vision_lab, pool, tomorrow)
    later = tomorrow + timedelta(hours=10)
    booking_at(mallory, other_lab, pool, later, slot=0)
    booking_at(mallory, other_lab, pool, later, slot=1)  # capacity 2: both nodes taken
    before = times(booking)

    response = move(as_alice, booking, later, later + timedelta(hours=2))

    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "pool_full"
    assert body["extra"]["next_free"]
    assert times(booking) == before


def test_moving_off_the_grid_is_refused(as_alice, alice, vision_lab, pool, quotas, tomorrow):
    booking = booking_at(alice, vision_lab, pool, tomorrow)
    before = times(booking)

    start = tomorrow + timedelta(hours=3, minutes=7)
    response = move(as_alice, booking, start, start + timedelta(hours=2))

    assert response.status_code == 400, response.content
    assert (response.json()["code"], response.json()["extra"]["fields"].keys()) == (
        "off_granularity",
        {"start"},
    )
    assert times(booking) == before


def test_a_researcher_cannot_move_a_labmates_booking(alice, vision_lab, pool, quotas, tomorrow):
    labmate = UserFactory(username="dave")
    MembershipFactory(user=labmate, lab=vision_lab)
    booking = booking_at(alice, vision_lab, pool, tomorrow)
    before = times(booking)

    response = move(
        client_for(labmate), booking, tomorrow + timedelta(hours=4), tomorrow + timedelta(hours=6)
    )

    assert response.status_code in (403, 404), response.content
    assert times(booking) == before


@pytest.mark.parametrize("status", ["provisioning", "ready"])
def test_a_started_booking_cannot_be_moved(
    as_alice, alice, vision_lab, pool, quotas, tomorrow, status
):
    booking = booking_at(alice, vision_lab, pool, tomorrow, status=status)
    before = times(booking)

    response = move(as_alice, booking, tomorrow + timedelta(hours=4), tomorrow + timedelta(hours=6))

    assert response.status_code == 409, response.content
    assert response.json()["code"] == "invalid_status"
    assert times(booking) == before


def test_a_booking_moves_into_its_own_old_time_when_the_other_node_is_taken(
    as_alice, alice, mallory, vision_lab, other_lab, pool, quotas, tomorrow
):
    # Both nodes are busy over [tomorrow, +2h): only alice's own booking holds the second one, so
    # the move fits only if the booking is excluded from its own capacity check.
    booking = booking_at(alice, vision_lab, pool, tomorrow, slot=0)
    booking_at(mallory, other_lab, pool, tomorrow - timedelta(hours=2), hours=6, slot=1)

    response = move(as_alice, booking, tomorrow + timedelta(hours=1), tomorrow + timedelta(hours=2))

    assert response.status_code == 200, response.content
    booking.refresh_from_db()
    assert (booking.start, booking.slot) == (tomorrow + timedelta(hours=1), 0)


def test_an_owner_moving_an_approved_booking_in_an_approval_pool_asks_again(
    as_alice, alice, vision_lab, pool, quotas, tomorrow
):
    pool.requires_approval = True
    pool.save(update_fields=["requires_approval"])
    booking = booking_at(alice, vision_lab, pool, tomorrow)

    response = move(as_alice, booking, tomorrow + timedelta(hours=4), tomorrow + timedelta(hours=6))

    assert response.status_code == 200, response.content
    booking.refresh_from_db()
    assert booking.status == "pending"


def test_a_lab_admin_moving_an_approved_booking_in_an_approval_pool_keeps_it_approved(
    as_bob, alice, vision_lab, pool, quotas, tomorrow
):
    pool.requires_approval = True
    pool.save(update_fields=["requires_approval"])
    booking = booking_at(alice, vision_lab, pool, tomorrow)

    response = move(as_bob, booking, tomorrow + timedelta(hours=4), tomorrow + timedelta(hours=6))

    assert response.status_code == 200, response.content
    booking.refresh_from_db()
    assert booking.status == "scheduled"

"""ICS subscription feeds: valid RFC 5545, revocable, anonymous for other labs (I-6), UTC (I-7)."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
import recurring_ical_events
from icalendar import Calendar
from rest_framework.test import APIClient

from conftest import client_for
from labgpu.accounts.models import ApiToken
from labgpu.accounts.services import token_create, token_revoke
from labgpu.bookings.models import Booking
from labgpu.bookings.services import booking_cancel, booking_move
from labgpu.bookings.services.series import recurrence_of, series_create
from labgpu.bookings.tests.test_series import last_sunday_of_march, quota_months
from labgpu.catalog.tests.factories import NodePoolFactory
from labgpu.core.timeutils import now
from labgpu.feeds.models import CalendarFeed
from labgpu.feeds.services import feed_create

pytestmark = pytest.mark.django_db

BERLIN = ZoneInfo("Europe/Berlin")


def make_booking(user, lab, pool, start, end, *, status="scheduled", purpose="", slot=0):
    """Straight into the table: the feed only reads bookings, and these may lie years ahead."""
    return Booking.objects.create(
        user=user,
        lab=lab,
        pool=pool,
        start=start,
        end=end,
        purpose=purpose,
        status=status,
        slot=slot,
        reserved_start=start,
        reserved_end=end,
        gpu_count=1,
        price_per_hour=Decimal("1.99"),
    )


def fetch(client, url):
    response = client.get(url)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/calendar")
    return Calendar.from_ical(response.content)


def events_of(calendar):
    return list(calendar.walk("VEVENT"))


def subscribe(client, **body):
    response = client.post("/api/v1/feeds/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_user_feed_lists_own_bookings_as_valid_rfc5545(
    as_alice, alice, vision_lab, pool, client, tomorrow
):
    booking = make_booking(
        alice, vision_lab, pool, tomorrow, tomorrow + timedelta(hours=2), purpose="SDXL sweep"
    )
    make_booking(
        alice, vision_lab, pool, tomorrow, tomorrow + timedelta(hours=1), status="cancelled", slot=1
    )
    created = subscribe(as_alice, kind="user")
    assert created["url"].endswith(".ics") and created["token"] in created["url"]

    calendar = fetch(client, created["url"])
    assert calendar["VERSION"] == "2.0" and calendar["PRODID"]
    assert calendar["X-WR-TIMEZONE"] == "Asia/Shanghai"
    (event,) = events_of(calendar)  # the cancelled one is not in the feed
    assert str(event["UID"]) == f"booking-{booking.pk}@labgpu"
    assert str(event["SUMMARY"]) == "MI300X tor1: SDXL sweep"
    assert event.decoded("DTSTART") == tomorrow
    assert event.decoded("DTEND") == tomorrow + timedelta(hours=2)
    assert event["DTSTART"].to_ical().endswith(b"Z")
    assert event.get("DTSTAMP") is not None
    # The UID stays the same from one fetch to the next, so calendar apps update in place.
    assert str(events_of(fetch(client, created["url"]))[0]["UID"]) == str(event["UID"])


def test_completed_bookings_stay_in_the_feed(alice, vision_lab, pool, client, monkeypatch):
    start = datetime(2026, 1, 5, 9, tzinfo=UTC)
    booking = make_booking(
        alice, vision_lab, pool, start, start + timedelta(hours=1), status="completed"
    )
    _, raw = feed_create(user=alice, kind="user")
    # Two days later the finished booking is still in the feed's window.
    monkeypatch.setattr("labgpu.feeds.selectors.now", lambda: start + timedelta(days=2))
    (event,) = events_of(fetch(client, f"/api/v1/feeds/{raw}.ics"))
    assert str(event["UID"]) == f"booking-{booking.pk}@labgpu"
    # Long after, it drops out: feeds stay small.
    monkeypatch.setattr("labgpu.feeds.selectors.now", lambda: start + timedelta(days=365))
    assert events_of(fetch(client, f"/api/v1/feeds/{raw}.ics")) == []


def test_a_booking_ended_early_ends_in_the_feed_when_it_really_ended(
    as_alice, alice, vision_lab, pool, client
):
    start = now() - timedelta(hours=1)
    booking = make_booking(alice, vision_lab, pool, start, start + timedelta(hours=4))
    Booking.objects.filter(pk=booking.pk).update(status="ready")
    ended = as_alice.post(f"/api/v1/bookings/{booking.pk}/cancel/", {}, format="json")
    assert ended.status_code == 200, ended.content
    booking.refresh_from_db()
    assert booking.status == "ending" and booking.ended_at is not None
    assert ended.json()["actual_end"] is not None
    _, raw = feed_create(user=alice, kind="user")

    (event,) = events_of(fetch(client, f"/api/v1/feeds/{raw}.ics"))
    assert event.decoded("DTEND") == booking.ended_at.replace(microsecond=0)
    assert event.decoded("DTSTART") == start.replace(microsecond=0)


def test_pool_feed_shows_other_labs_only_as_anonymous_busy_blocks(
    as_alice, alice, mallory, vision_lab, other_lab, pool, client, tomorrow
):
    """I-6: another lab's booking carries no lab, user, purpose or id."""
    mine = make_booking(
        alice, vision_lab, pool, tomorrow, tomorrow + timedelta(hours=1), purpose="my run"
    )
    theirs = make_booking(
        mallory,
        other_lab,
        pool,
        tomorrow,
        tomorrow + timedelta(hours=3),
        purpose="secret project",
        slot=1,
    )
    created = subscribe(as_alice, kind="pool", pool=pool.pk)
    assert created["pool_name"] == "MI300X tor1"

    response = client.get(created["url"])
    text = response.content.decode()
    for leak in ("secret project", "mallory", "Language Lab", f"booking-{theirs.pk}@"):
        assert leak not in text
    events = {str(e["SUMMARY"]): e for e in events_of(Calendar.from_ical(response.content))}
    assert set(events) == {"MI300X tor1: my run", "Busy"}
    busy = events["Busy"]
    assert busy.get("DESCRIPTION") is None and busy.get("CATEGORIES") is None
    assert busy.decoded("DTEND") - busy.decoded("DTSTART") == timedelta(hours=3)
    assert str(events["MI300X tor1: my run"]["UID"]) == f"booking-{mine.pk}@labgpu"
    uids = sorted(str(e["UID"]) for e in events_of(fetch(client, created["url"])))
    assert uids == sorted(str(e["UID"]) for e in events.values())  # stable across fetches


def test_I7_times_are_right_across_the_dst_change(alice, vision_lab, pool, client):
    """I-7: 01:30 CEST (+02:00) and 03:30 CET (+01:00) on 2027-10-31 are 23:30 and 02:30 UTC."""
    alice.timezone = "Europe/Berlin"
    alice.save(update_fields=["timezone"])
    before = datetime(2027, 10, 31, 1, 30, tzinfo=BERLIN)  # still summer time
    after = datetime(2027, 10, 31, 3, 30, tzinfo=BERLIN)  # winter time
    assert before.utcoffset() == timedelta(hours=2) and after.utcoffset() == timedelta(hours=1)
    make_booking(alice, vision_lab, pool, before, before + timedelta(hours=1), purpose="before")
    make_booking(
        alice, vision_lab, pool, after, after + timedelta(hours=1), purpose="after", slot=1
    )
    _, raw = feed_create(user=alice, kind="user")

    calendar = fetch(client, f"/api/v1/feeds/{raw}.ics")
    assert calendar["X-WR-TIMEZONE"] == "Europe/Berlin"
    starts = {str(e["SUMMARY"]).split(": ")[1]: e for e in events_of(calendar)}
    assert starts["before"].decoded("DTSTART") == datetime(2027, 10, 30, 23, 30, tzinfo=UTC)
    assert starts["after"].decoded("DTSTART") == datetime(2027, 10, 31, 2, 30, tzinfo=UTC)
    assert starts["before"]["DTSTART"].to_ical() == b"20271030T233000Z"
    assert starts["after"]["DTEND"].to_ical() == b"20271031T033000Z"
    # Two wall-clock hours apart, but three real ones: the clocks went back in between.
    gap = starts["after"].decoded("DTSTART") - starts["before"].decoded("DTSTART")
    assert gap == timedelta(hours=3)


def test_revoked_or_unknown_feed_is_404(as_alice, client):
    created = subscribe(as_alice, kind="user")
    assert client.get(created["url"]).status_code == 200
    assert as_alice.delete(f"/api/v1/feeds/{created['id']}/").status_code == 204
    gone = client.get(created["url"])
    assert gone.status_code == 404 and gone.json()["code"] == "not_found"
    assert client.get("/api/v1/feeds/lgf_nothing_here.ics").status_code == 404
    listed = as_alice.get("/api/v1/feeds/").json()
    assert listed[0]["revoked_at"] is not None and "token" not in listed[0]
    # Revoking again is harmless.
    assert as_alice.delete(f"/api/v1/feeds/{created['id']}/").status_code == 204


def test_feeds_of_other_users_are_invisible(as_alice, as_mallory):
    created = subscribe(as_alice, kind="user")
    assert as_mallory.get("/api/v1/feeds/").json() == []
    assert as_mallory.delete(f"/api/v1/feeds/{created['id']}/").status_code == 404


def test_only_the_hash_of_the_secret_is_stored(alice):
    feed, raw = feed_create(user=alice, kind="user")
    assert raw.startswith("lgf_") and raw not in feed.secret_hash
    assert not CalendarFeed.objects.filter(secret_hash=raw).exists()


def test_pool_feed_needs_a_visible_pool(as_alice, as_mallory, pool, other_lab, vision_lab):
    missing = as_alice.post("/api/v1/feeds/", {"kind": "pool"}, format="json")
    assert missing.status_code == 400 and missing.json()["extra"]["fields"]["pool"]
    pool.allowed_labs.set([vision_lab])
    hidden = as_mallory.post("/api/v1/feeds/", {"kind": "pool", "pool": pool.pk}, format="json")
    assert hidden.status_code == 400 and hidden.json()["code"] == "does_not_exist"  # as unknown
    extra = as_alice.post("/api/v1/feeds/", {"kind": "user", "pool": pool.pk}, format="json")
    assert extra.status_code == 400


def test_pool_feed_stops_when_the_pool_is_closed_to_the_users_lab(
    as_alice, alice, pool, other_lab, client
):
    created = subscribe(as_alice, kind="pool", pool=pool.pk)
    pool.allowed_labs.set([other_lab])
    assert client.get(created["url"]).status_code == 404


def test_read_only_token_can_list_but_not_create_feeds(alice):
    from conftest import client_for

    reader = client_for(alice, scopes=["read"])
    assert reader.get("/api/v1/feeds/").status_code == 200
    assert reader.post("/api/v1/feeds/", {"kind": "user"}, format="json").status_code == 403


@pytest.mark.security
def test_book_scoped_token_cannot_create_calendar_feeds(alice):
    """Issue 11 item 10: a feed is a credential that outlives requests; a token made to book
    cannot mint one. Feeds need a session or the `feeds` scope."""
    booker = client_for(alice, scopes=["book"])
    refused = booker.post("/api/v1/feeds/", {"kind": "user"}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    assert not CalendarFeed.objects.exists()
    feeder = client_for(alice, scopes=["feeds"])
    assert feeder.post("/api/v1/feeds/", {"kind": "user"}, format="json").status_code == 201


@pytest.mark.security
def test_feed_made_by_a_token_dies_when_the_token_is_revoked(alice, client):
    token, raw = token_create(user=alice, name="calendar script", scopes=["feeds"])
    script = APIClient()
    script.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    created = subscribe(script, kind="user")
    assert CalendarFeed.objects.get(pk=created["id"]).created_by_token_id == token.pk
    assert client.get(created["url"]).status_code == 200
    token_revoke(token=token)
    gone = client.get(created["url"])
    assert gone.status_code == 404 and gone.json()["code"] == "not_found"
    # The owner's list shows it ended, from the session.
    listed = client_for(alice).get("/api/v1/feeds/").json()
    assert [(f["id"], f["revoked_at"] is not None) for f in listed] == [(created["id"], True)]


@pytest.mark.security
def test_feed_made_by_a_token_dies_when_the_token_expires(alice, client):
    token, raw = token_create(
        user=alice, name="short", scopes=["feeds"], expires_at=now() + timedelta(hours=1)
    )
    script = APIClient()
    script.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    created = subscribe(script, kind="user")
    assert client.get(created["url"]).status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=now() - timedelta(seconds=1))
    assert client.get(created["url"]).status_code == 404


def test_feed_made_in_a_session_outlives_the_users_tokens(alice, as_alice, client):
    token, _ = token_create(user=alice, name="other", scopes=["feeds"])
    created = subscribe(as_alice, kind="user")
    token_revoke(token=token)
    assert client.get(created["url"]).status_code == 200


def test_a_series_in_the_feed_expands_as_a_calendar_client_does_to_the_booking_rows(
    alice, vision_lab, instance_type, client
):
    """Issue 25: a weekly series across Berlin's spring change, one occurrence moved and one
    cancelled, read by icalendar and expanded by recurring-ical-events (what calendar clients
    do with RRULE/EXDATE/RECURRENCE-ID), equals the live bookings in the table."""
    pool = NodePoolFactory(instance_type=instance_type, max_days_ahead=400)
    change = last_sunday_of_march()
    monday = change - timedelta(days=13)
    first = datetime(monday.year, monday.month, monday.day, 9, tzinfo=BERLIN)
    quota_months(vision_lab, instance_type, first.date(), 2)
    series = series_create(
        user=alice,
        pool=pool.pk,
        start=first,
        end=first + timedelta(hours=2),
        recurrence=recurrence_of(frequency="weekly", timezone="Europe/Berlin", count=5),
    ).series
    occurrences = list(Booking.objects.filter(series=series).order_by("start"))
    booking_cancel(actor=alice, booking=occurrences[1])
    moved = occurrences[3]
    booking_move(
        actor=alice,
        booking=moved,
        start=moved.start + timedelta(hours=3),
        end=moved.end + timedelta(hours=3),
    )
    _, raw = feed_create(user=alice, kind="user")
    body = client.get(f"/api/v1/feeds/{raw}.ics").content

    calendar = Calendar.from_ical(body)
    expanded = recurring_ical_events.of(calendar).between(
        first - timedelta(days=1), first + timedelta(days=60)
    )
    from_feed = sorted((e.decoded("DTSTART"), e.decoded("DTEND")) for e in expanded)
    rows = sorted(
        Booking.objects.filter(series=series, status__in=Booking.LIVE_STATUSES).values_list(
            "start", "end"
        )
    )
    assert from_feed == rows and len(rows) == 4
    local = [s.astimezone(BERLIN).strftime("%H:%M") for s, _ in from_feed]
    assert local == ["09:00", "09:00", "12:00", "09:00"]
    assert all(f"series #{series.pk}" in str(e["DESCRIPTION"]) for e in expanded)

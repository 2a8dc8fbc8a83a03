"""Budgets in the booking rules (I-11) and cost centres on bookings, through the services and the
HTTP API. Amounts are checked against numbers worked out by hand from the catalog price (10 USD
an hour), never against another of our computed values."""

from datetime import timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.core import mail

from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Booking, Notification
from labgpu.bookings.services import booking_create, booking_extend, booking_move
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.budgets import services
from labgpu.budgets.models import Budget, BudgetAlert, CostCentre
from labgpu.core.errors import ApplicationError
from labgpu.core.timeutils import next_month

pytestmark = pytest.mark.django_db
PRICE = Decimal("10.00")


@pytest.fixture
def priced(instance_type):
    instance_type.price_per_hour = PRICE
    instance_type.save(update_fields=["price_per_hour"])
    return instance_type


@pytest.fixture
def hard_budget(bob, vision_lab, priced):
    """100 USD a month, hard: 10 hours of the pool."""
    return services.budget_create(
        actor=bob, lab=vision_lab, amount=Decimal(100), enforcement=Budget.Enforcement.HARD
    )


def hours_later(moment, hours):
    return moment + timedelta(hours=hours)


def test_I11_hard_budget_refuses_a_booking_that_would_overshoot(
    as_alice, bob, pool, quotas, hard_budget, mid_next_month
):
    bob.first_name, bob.last_name = "Bob", "Builder"
    bob.save(update_fields=["first_name", "last_name"])
    start = mid_next_month
    ok = as_alice.post(
        "/api/v1/bookings/",
        {"pool": pool.pk, "start": start.isoformat(), "end": hours_later(start, 9).isoformat()},
        format="json",
    )
    assert ok.status_code == 201, ok.content  # 90.00 of 100.00
    later = hours_later(start, 48)
    refused = as_alice.post(
        "/api/v1/bookings/",
        {"pool": pool.pk, "start": later.isoformat(), "end": hours_later(later, 5).isoformat()},
        format="json",
    )
    assert refused.status_code == 409, refused.content
    body = refused.json()
    assert body["code"] == "budget_exceeded"
    assert body["extra"]["left"] == "10.00"
    assert body["extra"]["needed"] == "50.00"
    assert body["extra"]["currency"] == "USD"
    assert body["extra"]["raise_by"] == ["Bob Builder"]
    assert "Bob Builder" in body["message"]
    assert Booking.objects.filter(lab=hard_budget.lab).count() == 1
    # Exactly what is left still fits: 1 hour = 10.00.
    fits = as_alice.post(
        "/api/v1/bookings/",
        {"pool": pool.pk, "start": later.isoformat(), "end": hours_later(later, 1).isoformat()},
        format="json",
    )
    assert fits.status_code == 201, fits.content


def test_I11_the_refusal_reads_in_the_readers_language(
    alice, pool, quotas, hard_budget, mid_next_month
):
    alice.language = "zh-hans"
    alice.save(update_fields=["language"])
    from conftest import client_for

    response = client_for(alice, scopes=["book"]).post(
        "/api/v1/bookings/",
        {
            "pool": pool.pk,
            "start": mid_next_month.isoformat(),
            "end": hours_later(mid_next_month, 11).isoformat(),
        },
        format="json",
    )
    assert response.status_code == 409
    assert "预算" in response.json()["message"], response.json()["message"]


def test_I11_extending_and_moving_are_checked_against_the_budget(
    alice, bob, pool, quotas, hard_budget, mid_next_month
):
    booking_create(
        user=alice,
        pool=pool,
        start=hours_later(mid_next_month, -20),
        end=hours_later(mid_next_month, -17),
    )  # 30.00
    booking, _ = booking_create(
        user=alice, pool=pool, start=mid_next_month, end=hours_later(mid_next_month, 6)
    )
    with pytest.raises(ApplicationError) as refused:
        booking_extend(actor=alice, booking=booking, end=hours_later(mid_next_month, 8))
    assert refused.value.code == "budget_exceeded"
    assert refused.value.extra["left"] == "70.00"  # the booking itself excluded
    assert refused.value.extra["needed"] == "80.00"
    booking_extend(actor=alice, booking=booking, end=hours_later(mid_next_month, 7))
    # Moving the 7 hours elsewhere in the month is no new spend: it fits; 8 hours do not.
    with pytest.raises(ApplicationError) as refused:
        booking_move(
            actor=alice,
            booking=booking,
            start=hours_later(mid_next_month, 72),
            end=hours_later(mid_next_month, 80),
        )
    assert refused.value.code == "budget_exceeded"
    moved = booking_move(
        actor=alice,
        booking=booking,
        start=hours_later(mid_next_month, 72),
        end=hours_later(mid_next_month, 79),
    )
    assert moved.start == hours_later(mid_next_month, 72)


def test_I11_consumed_forecast_and_committed_count_each_booking_once(
    as_bob, alice, bob, vision_lab, pool, quotas, priced, mid_next_month
):
    first = mid_next_month.replace(day=1, hour=0)
    # Consumed: ran 10 h, metered at 30.00 (the ledger's cost, not the catalog's).
    BookingFactory(
        lab=vision_lab,
        user=alice,
        pool=pool,
        start=first,
        end=first + timedelta(hours=10),
        status=Booking.Status.COMPLETED,
        actual_cost=Decimal("30.00"),
    )
    # Forecast: running, 8 h to its end at 10.00.
    BookingFactory(
        lab=vision_lab,
        user=alice,
        pool=pool,
        start=first + timedelta(hours=20),
        end=first + timedelta(hours=28),
        status=Booking.Status.READY,
        slot=1,
    )
    # Committed: scheduled, 4 h at 10.00; a cancelled one counts nothing.
    BookingFactory(
        lab=vision_lab,
        user=alice,
        pool=pool,
        start=first + timedelta(hours=40),
        end=first + timedelta(hours=44),
    )
    BookingFactory(
        lab=vision_lab,
        user=alice,
        pool=pool,
        start=first + timedelta(hours=50),
        end=first + timedelta(hours=60),
        status=Booking.Status.CANCELLED,
    )
    budget = services.budget_create(
        actor=bob,
        lab=vision_lab,
        amount=Decimal(200),
        period=Budget.Period.CUSTOM,
        starts_on=first.date(),
        ends_on=(next_month(first.date()) - timedelta(days=1)),
    )
    row = as_bob.get(f"/api/v1/budgets/{budget.pk}/").json()
    assert (row["consumed"], row["forecast"], row["committed"]) == ("30.00", "80.00", "40.00")
    assert (row["projected"], row["left"], row["percent"]) == ("150.00", "50.00", "75.0")


def test_soft_budget_warns_at_each_threshold_once_in_app_and_by_mail(
    alice, bob, vision_lab, pool, quotas, priced, mid_next_month, django_capture_on_commit_callbacks
):
    services.budget_create(actor=bob, lab=vision_lab, amount=Decimal(100))
    mail.outbox.clear()

    def book(start_h, hours):
        start = hours_later(mid_next_month, start_h)
        with django_capture_on_commit_callbacks(execute=True):
            booking_create(user=alice, pool=pool, start=start, end=hours_later(start, hours))

    book(0, 2)  # 20 %
    assert not BudgetAlert.objects.exists()
    book(20, 4)  # 60 %: 50
    book(40, 1)  # 70 %: nothing new
    book(60, 2)  # 90 %: 80
    book(80, 2)  # 110 %: soft lets it through, and says 100
    assert sorted(BudgetAlert.objects.values_list("percent", flat=True)) == [50, 80, 100]
    subjects = list(
        Notification.objects.filter(user=bob).order_by("id").values_list("subject", flat=True)
    )
    assert subjects == [
        f"Vision Lab has reached {p}% of its budget for {mid_next_month:%Y-%m}"
        for p in (50, 80, 100)
    ]
    assert [m.to for m in mail.outbox if "budget" in m.subject] == [[bob.email]] * 3
    assert not Notification.objects.filter(user=alice).exists()  # lab admins only


def test_budget_alert_posts_to_the_labs_chat_channel(
    alice,
    bob,
    vision_lab,
    pool,
    quotas,
    priced,
    mid_next_month,
    settings,
    django_capture_on_commit_callbacks,
):
    settings.LABGPU_CHAT_ALLOW_LOOPBACK = True
    from labgpu.chat.models import ChatDelivery
    from labgpu.chat.services import channel_create

    channel = channel_create(
        actor=bob,
        lab=vision_lab,
        name="lab",
        kind="slack",
        url="http://127.0.0.1:9/services/a/b/c",
        events=["budget_threshold"],
    )
    services.budget_create(actor=bob, lab=vision_lab, amount=Decimal(10))
    with django_capture_on_commit_callbacks(execute=True):
        booking_create(
            user=alice, pool=pool, start=mid_next_month, end=hours_later(mid_next_month, 1)
        )
    (delivery,) = ChatDelivery.objects.filter(channel=channel, event="budget_threshold")
    assert "100%" in delivery.title and "10.00 USD" in delivery.text


def test_booking_carries_the_members_default_cost_centre_or_the_one_named(
    as_alice, alice, bob, vision_lab, other_lab, pool, quotas, tomorrow
):
    grant = services.cost_centre_create(actor=bob, lab=vision_lab, code="NSF-123", name="Grant")
    project = services.cost_centre_create(actor=bob, lab=vision_lab, code="P-7")
    services.cost_centre_default_set(actor=bob, lab=vision_lab, user=alice, cost_centre=grant)
    stranger = CostCentre.objects.create(lab=other_lab, code="THEIRS")
    body = {
        "pool": pool.pk,
        "start": tomorrow.isoformat(),
        "end": hours_later(tomorrow, 1).isoformat(),
    }

    made = as_alice.post("/api/v1/bookings/", body, format="json")
    assert made.status_code == 201 and made.json()["cost_centre"] == grant.pk
    named = as_alice.post(
        "/api/v1/bookings/",
        {
            **body,
            "start": hours_later(tomorrow, 2).isoformat(),
            "end": hours_later(tomorrow, 3).isoformat(),
            "cost_centre": project.pk,
        },
        format="json",
    )
    assert named.status_code == 201 and named.json()["cost_centre"] == project.pk
    refused = as_alice.post(
        "/api/v1/bookings/",
        {
            **body,
            "start": hours_later(tomorrow, 4).isoformat(),
            "end": hours_later(tomorrow, 5).isoformat(),
            "cost_centre": stranger.pk,
        },
        format="json",
    )
    assert refused.status_code == 400
    assert refused.json()["code"] == "cost_centre_invalid"
    assert "cost_centre" in refused.json()["extra"]["fields"]
    assert list(Booking.objects.order_by("id").values_list("cost_centre_id", flat=True)) == [
        grant.pk,
        project.pk,
    ]


def test_a_cost_centres_budget_counts_only_its_bookings(
    alice, bob, vision_lab, pool, quotas, priced, mid_next_month
):
    grant = services.cost_centre_create(actor=bob, lab=vision_lab, code="NSF-123")
    services.budget_create(
        actor=bob,
        lab=vision_lab,
        cost_centre=grant,
        amount=Decimal(10),
        enforcement=Budget.Enforcement.HARD,
    )
    # 2 hours on no cost centre: the grant's budget does not pay for them.
    booking_create(user=alice, pool=pool, start=mid_next_month, end=hours_later(mid_next_month, 2))
    start = hours_later(mid_next_month, 30)
    booking_create(
        user=alice, pool=pool, start=start, end=hours_later(start, 1), cost_centre=grant.pk
    )
    with pytest.raises(ApplicationError) as refused:
        later = hours_later(start, 10)
        booking_create(
            user=alice, pool=pool, start=later, end=hours_later(later, 1), cost_centre=grant.pk
        )
    assert refused.value.code == "budget_exceeded"
    assert refused.value.extra["left"] == "0.00"


def test_budget_and_cost_centre_changes_are_lab_admins_and_audited(alice, bob, vision_lab):
    with pytest.raises(ApplicationError) as refused:
        services.budget_create(actor=alice, lab=vision_lab, amount=Decimal(5))
    assert refused.value.code == "not_lab_admin"
    budget = services.budget_create(actor=bob, lab=vision_lab, amount=Decimal(5))
    vision_lab.refresh_from_db()
    assert vision_lab.has_budget
    services.budget_update(actor=bob, budget=budget, amount=Decimal(7))
    centre = services.cost_centre_create(actor=bob, lab=vision_lab, code="X")
    services.cost_centre_update(actor=bob, cost_centre=centre, is_active=False)
    services.budget_delete(actor=bob, budget=budget)
    vision_lab.refresh_from_db()
    assert not vision_lab.has_budget
    assert list(AuditEvent.objects.order_by("id").values_list("action", flat=True)) == [
        "budget.create",
        "budget.update",
        "cost_centre.create",
        "cost_centre.update",
        "budget.delete",
    ]


def test_a_lab_without_a_budget_books_as_before(alice, pool, quotas, tomorrow, vision_lab):
    assert not vision_lab.has_budget
    booking, created = booking_create(
        user=alice, pool=pool, start=tomorrow, end=hours_later(tomorrow, 2)
    )
    assert created and booking.cost_centre_id is None


def test_budget_api_refuses_bad_input_with_a_field(as_bob, vision_lab):
    response = as_bob.post(
        "/api/v1/budgets/",
        {"lab": vision_lab.pk, "amount": "50", "period": "custom", "starts_on": "2030-02-01"},
        format="json",
    )
    assert response.status_code == 400
    assert "ends_on" in response.json()["extra"]["fields"]
    response = as_bob.post(
        "/api/v1/budgets/", {"lab": vision_lab.pk, "amount": "50", "currency": "EUR"}, format="json"
    )
    assert response.status_code == 400 and "currency" in response.json()["extra"]["fields"]
    assert not Budget.objects.exists()


def test_member_of_another_lab_cannot_set_a_budget(as_mallory, vision_lab):
    response = as_mallory.post(
        "/api/v1/budgets/", {"lab": vision_lab.pk, "amount": "50"}, format="json"
    )
    assert response.status_code == 400  # the lab is not one mallory may name
    assert not Budget.objects.exists()


def test_budget_dates_beyond_the_accepted_range_are_a_field_error(as_bob, bob, vision_lab):
    # 9999-12-31 + one day overflows the custom period's end: refused as ends_on, not a 500.
    response = as_bob.post(
        "/api/v1/budgets/",
        {
            "lab": vision_lab.pk,
            "amount": "50",
            "period": "custom",
            "starts_on": "2030-02-01",
            "ends_on": "9999-12-31",
        },
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "ends_on" in response.json()["extra"]["fields"]
    assert not Budget.objects.exists()
    budget = services.budget_create(actor=bob, lab=vision_lab, amount=Decimal(50))
    response = as_bob.patch(
        f"/api/v1/budgets/{budget.pk}/",
        {"period": "custom", "starts_on": "0001-01-01", "ends_on": "9999-12-31"},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert {"starts_on", "ends_on"} & set(response.json()["extra"]["fields"])
    budget.refresh_from_db()
    assert budget.period == Budget.Period.MONTH


def test_a_budget_overspent_ten_million_fold_still_lists(
    as_bob, alice, bob, vision_lab, pool, quotas, priced, mid_next_month
):
    first = mid_next_month.replace(day=1, hour=0)
    BookingFactory(
        lab=vision_lab,
        user=alice,
        pool=pool,
        start=first,
        end=first + timedelta(hours=200),
        status=Booking.Status.COMPLETED,
        actual_cost=Decimal("2000.00"),
    )
    services.budget_create(
        actor=bob,
        lab=vision_lab,
        amount=Decimal("0.01"),
        period=Budget.Period.CUSTOM,
        starts_on=first.date(),
        ends_on=(next_month(first.date()) - timedelta(days=1)),
    )
    response = as_bob.get("/api/v1/budgets/")
    assert response.status_code == 200, response.content
    # 2000.00 of 0.01 by hand: 20,000,000 %.
    assert [row["percent"] for row in response.json()["results"]] == ["20000000.0"]


def test_budget_api_gives_the_period_containing_the_asked_moment(
    as_bob, bob, alice, vision_lab, pool, priced, mid_next_month
):
    """The booking form sets a booking's cost against the budget period its start falls in
    (`?at=`), not the current one: a booking next month is set against next month's budget."""
    budget = services.budget_create(actor=bob, lab=vision_lab, amount=Decimal(500))
    # Committed next month: 6 h at the priced 10.00 = 60.00 (the database rows say so).
    BookingFactory(
        lab=vision_lab,
        user=alice,
        pool=pool,
        start=mid_next_month,
        end=hours_later(mid_next_month, 6),
    )
    first = mid_next_month.replace(day=1, hour=0)
    now_row = as_bob.get(f"/api/v1/budgets/{budget.pk}/").json()
    assert now_row["period_start"] != first.isoformat().replace("+00:00", "Z")
    assert now_row["committed"] == "0.00"
    at = hours_later(mid_next_month, 1).astimezone(ZoneInfo("Asia/Shanghai")).isoformat()
    row = as_bob.get(f"/api/v1/budgets/{budget.pk}/", {"at": at}).json()
    assert row["period_start"] == first.isoformat().replace("+00:00", "Z")
    assert (row["committed"], row["left"]) == ("60.00", "440.00")
    (listed,) = as_bob.get("/api/v1/budgets/", {"lab": vision_lab.pk, "at": at}).json()["results"]
    assert (listed["committed"], listed["left"]) == ("60.00", "440.00")
    for bad in ("2030-05-01T10:00:00", "tomorrow"):
        response = as_bob.get("/api/v1/budgets/", {"lab": vision_lab.pk, "at": bad})
        assert response.status_code == 400, (bad, response.content)
        assert "at" in response.json()["extra"]["fields"]

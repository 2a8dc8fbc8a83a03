from datetime import date
from decimal import Decimal

import pytest

from conftest import client_for
from labgpu.audit.models import AuditEvent
from labgpu.pricing.models import DisplayCurrency

pytestmark = pytest.mark.django_db


def test_price_list_shows_the_provider_price_beside_the_adjustment(carol, alice, instance_type):
    adjusted = client_for(carol).post(
        f"/api/v1/instance-types/{instance_type.pk}/price-adjustment/",
        {"adjustment_pct": "5"},
        format="json",
    )
    assert adjusted.status_code == 200, adjusted.json()
    body = client_for(alice).get("/api/v1/prices/").json()
    (row,) = [r for r in body["instance_types"] if r["instance_type"] == instance_type.pk]
    assert (row["provider_price_hourly"], row["adjustment_pct"], row["price_hourly"]) == (
        "1.99000",
        "5.00",
        "2.08950",
    )
    assert body["currency"] == "USD" and body["display_currency"] is None
    history = client_for(alice).get(f"/api/v1/instance-types/{instance_type.pk}/prices/").json()
    assert [h["source"] for h in history] == ["adjustment", "catalog"]
    assert AuditEvent.objects.filter(action="price.adjustment", actor=carol).count() == 1


def test_bad_adjustments_and_rates_are_clear_json_errors(carol, instance_type):
    bad = client_for(carol).post(
        f"/api/v1/instance-types/{instance_type.pk}/price-adjustment/",
        {"adjustment_pct": "-250"},
        format="json",
    )
    assert bad.status_code == 400 and "adjustment_pct" in bad.json()["extra"]["fields"]
    for body, field in [
        ({"code": "CNY", "rate": "-1", "rate_date": "2030-05-31"}, "rate"),
        ({"code": "CNY", "rate": "7.1"}, "rate_date"),
        ({"code": "XXX", "rate": "7.1", "rate_date": "2030-05-31"}, "code"),
        # Positive, but 0 at the stored six places: the DB check would refuse it as a 500.
        ({"code": "CNY", "rate": "0.0000004", "rate_date": "2030-05-31"}, "rate"),
    ]:
        answer = client_for(carol).put("/api/v1/prices/display-currency/", body, format="json")
        assert answer.status_code == 400 and field in answer.json()["extra"]["fields"], body
    assert not DisplayCurrency.objects.exists()


def test_display_currency_is_set_by_site_admins_with_its_rate_and_date(carol, alice, instance_type):
    assert (
        client_for(alice)
        .put("/api/v1/prices/display-currency/", {"code": "CNY", "rate": "7.1"}, format="json")
        .status_code
        == 403
    )
    ok = client_for(carol).put(
        "/api/v1/prices/display-currency/",
        {"code": "cny", "rate": "7.1234", "rate_date": "2030-05-31"},
        format="json",
    )
    assert ok.status_code == 200
    body = client_for(alice).get("/api/v1/prices/").json()
    assert body["display_currency"] == {
        "code": "CNY",
        "rate": "7.123400",
        "rate_date": "2030-05-31",
    }
    (row,) = [r for r in body["instance_types"] if r["instance_type"] == instance_type.pk]
    assert Decimal(row["price_hourly_converted"]) == (Decimal("1.99") * Decimal("7.1234")).quantize(
        Decimal("0.01")
    )
    assert DisplayCurrency.objects.latest("id").rate_date == date(2030, 5, 31)


def test_sync_on_demand_is_for_site_admins(alice):
    assert client_for(alice).post("/api/v1/prices/sync/").status_code == 403

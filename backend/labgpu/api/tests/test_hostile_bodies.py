"""Issue 11 items 6 and 7: bodies no parser should choke on.

Item 6: 50,000 levels of nesting raised RecursionError (500) on every JSON endpoint, anonymous
login included. Item 7: `1e400` in an id field overflowed `int()` (500) on both booking paths,
feeds and quota requests.
"""

from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from rest_framework.test import APIClient

from conftest import client_for
from labgpu.bookings.models import Booking
from labgpu.feeds.models import CalendarFeed
from labgpu.quotas.models import QuotaRequest

pytestmark = pytest.mark.django_db

DEEP = "[" * 50_000 + "]" * 50_000
SCHEMA = Path(__file__).resolve().parents[3] / "openapi.yaml"


def raw_json(**tokens: str) -> str:
    """An object whose values are raw JSON tokens (1e400, NaN…), which json.dumps cannot write."""
    return "{" + ", ".join(f'"{key}": {token}' for key, token in tokens.items()) + "}"


def send(client, method, path, text):
    return client.generic(method, path, text.encode(), content_type="application/json")


def assert_json_400(response, code=None):
    assert response.status_code == 400, (response.status_code, response.content[:300])
    body = response.json()
    assert set(body) == {"message", "code", "extra"}
    if code:
        assert body["code"] == code, body


def json_operations():
    """Every operation of the schema that takes a JSON body, with `1` for path parameters."""
    spec = yaml.safe_load(SCHEMA.read_text())
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method not in {"post", "put", "patch"}:
                continue
            content = (operation.get("requestBody") or {}).get("content", {})
            if "application/json" in content:
                concrete = path
                for name in ("{id}", "{lab_pk}", "{token}"):
                    concrete = concrete.replace(name, "1")
                yield method.upper(), concrete


def test_deeply_nested_json_is_refused_on_anonymous_login():
    response = send(APIClient(), "POST", "/api/v1/auth/login/", DEEP)
    assert_json_400(response, "too_deeply_nested")


def test_deeply_nested_json_never_reaches_the_recursive_parser_on_any_endpoint(carol, alice):
    operations = list(json_operations())
    assert len(operations) > 20  # the scan found the API
    for user in (carol, alice):
        client = client_for(user)
        for method, path in operations:
            response = send(client, method, path, DEEP)
            assert response.status_code < 500, (method, path, response.content[:300])
            assert response["Content-Type"].startswith("application/json"), (method, path)
            if response.status_code == 400:
                # A parser with a small size limit (chat channels: 16 KiB) refuses the body
                # before reading its depth: also never the recursive parser.
                code = response.json()["code"]
                assert code in ("too_deeply_nested", "request_too_large"), (method, path, code)


def test_deeply_nested_json_is_refused_on_a_token_booking_create(alice, pool, quotas):
    token_client = client_for(alice, scopes=["book"])
    assert_json_400(send(token_client, "POST", "/api/v1/bookings/", DEEP), "too_deeply_nested")
    nested_field = raw_json(pool=str(pool.pk), end='"2030-01-01T00:00:00Z"', purpose=DEEP)
    assert_json_400(send(token_client, "POST", "/api/v1/bookings/", nested_field))
    assert Booking.objects.count() == 0


def test_reasonable_nesting_still_parses(as_carol):
    response = send(as_carol, "POST", "/api/v1/auth/login/", '{"username": [[[["x"]]]]}')
    assert response.status_code == 400 and response.json()["code"] != "too_deeply_nested"


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1e300", "1.5", "NaN", "Infinity", "true"])
@pytest.mark.parametrize("field", ["pool", "lab"])
def test_huge_numbers_in_booking_ids_are_a_400_on_both_paths(
    alice, pool, quotas, tomorrow, field, number
):
    start = tomorrow
    values = {"pool": str(pool.pk), "lab": "null"} | {field: number}
    end = start + timedelta(hours=2)
    text = raw_json(
        **values, start=f'"{start.isoformat()}"', end=f'"{end.isoformat()}"', purpose='"x"'
    )
    for client in (client_for(alice), client_for(alice, scopes=["book"])):  # session, token
        assert_json_400(send(client, "POST", "/api/v1/bookings/", text))
    assert Booking.objects.count() == 0


@pytest.mark.parametrize("number", ["1e400", "1e300", "1.5", "-1"])
def test_huge_numbers_in_feed_pool_are_a_400(as_alice, pool, number):
    text = raw_json(kind='"pool"', pool=number)
    assert_json_400(send(as_alice, "POST", "/api/v1/feeds/", text))
    assert CalendarFeed.objects.count() == 0


@pytest.mark.parametrize("number", ["1e400", "1e300", "1.5"])
@pytest.mark.parametrize("field", ["lab", "instance_type"])
def test_huge_numbers_in_quota_request_ids_are_a_400(
    as_bob, vision_lab, instance_type, field, number
):
    values = {"lab": str(vision_lab.pk), "instance_type": str(instance_type.pk)} | {field: number}
    text = raw_json(**values, month='"2099-01-01"', gpu_hours='"10"', reason='"x"')
    assert_json_400(send(as_bob, "POST", "/api/v1/quota-requests/", text))
    assert QuotaRequest.objects.count() == 0


def integer_query_parameters():
    """(path, parameter) for every integer query parameter of every GET in the schema."""
    spec = yaml.safe_load(SCHEMA.read_text())
    for path, item in spec["paths"].items():
        operation = item.get("get")
        if not operation or "{" in path:
            continue
        for parameter in operation.get("parameters", []):
            schema = parameter.get("schema", {})
            numeric = schema.get("type") in {"integer", "number"}
            paging = parameter["name"] in {"page", "page_size"}
            if parameter.get("in") == "query" and numeric and not paging:
                yield path, parameter["name"]


def test_huge_numbers_in_id_filters_are_a_400(carol):
    client = client_for(carol)
    probes = list(integer_query_parameters())
    assert ("/api/v1/bookings/", "lab") in probes  # the scan found the filters
    for path, name in probes:
        for number in ("1e400", "-1e400", "99999999999999999999999", "1e300", "NaN"):
            required = {"start": "2030-01-01T00:00:00Z", "end": "2030-02-01T00:00:00Z"}
            base = required if path == "/api/v1/usage/" else {}
            response = client.get(path, {**base, name: number})
            assert response.status_code in (200, 400), (path, name, number, response.content)
            if response.status_code == 400:
                assert name in response.json()["extra"]["fields"], (path, name, response.json())

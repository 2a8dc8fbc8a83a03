"""The server stack as deployed: a real gunicorn (started as backend/Procfile starts it) with
production settings — what a client sees before and around Django (issue 11 items 3, 11, 13, 14)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

import pytest

from labgpu.accounts.tests.factories import UserFactory
from labgpu.feeds.services import feed_create
from labgpu.ops.tests.test_security import BACKEND, production_env

pytestmark = [pytest.mark.security, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def raw_request(url: str, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are (an HTTP client library would refuse to send them)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


def assert_error_shape(status: int, headers: dict[str, str], body: bytes, expected: int) -> dict:
    assert status == expected, body
    assert headers["content-type"].startswith("application/json"), (headers, body)
    error = json.loads(body)
    assert set(error) == {"message", "code", "extra"} and error["message"], error
    return error


def wait_for_line(server, needle: str) -> str:
    """gunicorn writes the access line after the response; poll the log until it is there."""
    deadline = time.monotonic() + 20
    while needle not in server.log():
        if time.monotonic() > deadline:
            pytest.fail(f"{needle!r} never reached the log:\n{server.log()[-3000:]}")
        time.sleep(0.1)
    return server.log()


def test_feed_secrets_never_land_in_the_access_log(live_gunicorn, alice):
    """The finding: the secret is in the feed URL's path and gunicorn logs every request line."""
    feed, raw = feed_create(user=alice, kind="user")
    path = f"/api/v1/feeds/{raw}.ics"
    with live_gunicorn.client() as http:
        assert http.get(path).status_code == 200
        # Also in a query string, a Referer and a bearer header: still never logged.
        http.get(f"{path}?copy={raw}", headers={"Referer": f"https://x.example{path}"})
        http.get("/api/v1/me/", headers={"Authorization": f"Bearer {raw}"})
    log = wait_for_line(live_gunicorn, f"lgf_{feed.prefix}_[redacted].ics")
    assert raw not in log
    assert raw.split("_", 2)[2] not in log  # not even the secret part alone


def test_gunicorn_own_errors_answer_the_json_error_shape(live_gunicorn):
    """The finding: a URL over ~4 KB (414) and bad header characters (400) came back as HTML
    from gunicorn itself; now they carry the API's one error shape."""
    long_url = "/api/v1/pools/?q=" + "a" * 5000
    status, headers, body = raw_request(
        live_gunicorn.url, f"GET {long_url} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    )
    assert assert_error_shape(status, headers, body, 414)["code"] == "uri_too_long"
    status, headers, body = raw_request(
        live_gunicorn.url,
        b"GET /api/v1/pools/ HTTP/1.1\r\nHost: 127.0.0.1\r\nBad\x01Header: x\r\n\r\n",
    )
    assert assert_error_shape(status, headers, body, 400)["code"] == "bad_request"
    status, headers, body = raw_request(
        live_gunicorn.url,
        b"GET /api/v1/pools/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Ok: bad\x00value\r\n\r\n",
    )
    assert_error_shape(status, headers, body, 400)


def test_login_throttle_ignores_a_forged_x_forwarded_for_through_gunicorn(live_gunicorn, db):
    """Item 3 as an attacker met it: a fresh X-Forwarded-For per attempt, straight at gunicorn."""
    live_gunicorn.clear_cache()
    with live_gunicorn.client() as http:
        csrf = http.get("/api/v1/auth/csrf/").cookies["csrftoken"]
        statuses = []
        for n in range(11):
            response = http.post(
                "/api/v1/auth/login/",
                json={"username": f"user{n}", "password": "wrong"},
                headers={
                    "X-CSRFToken": csrf,
                    "Cookie": f"csrftoken={csrf}",  # Secure cookie: httpx keeps it off plain HTTP
                    "X-Forwarded-For": f"203.0.113.{n}",
                },
            )
            statuses.append(response.status_code)
    live_gunicorn.clear_cache()
    assert statuses == [401] * 10 + [429], statuses


def test_metrics_on_a_production_server_need_the_token(live_gunicorn):
    with live_gunicorn.client() as http:
        refused = http.get("/metrics")
        assert refused.status_code == 401 and refused.json()["code"] == "not_authenticated"
        ok = http.get(
            "/metrics", headers={"Authorization": f"Bearer {live_gunicorn.metrics_token}"}
        )
    assert ok.status_code == 200 and "labgpu_provider_requests" in ok.text


def test_production_without_a_metrics_token_serves_no_metrics():
    """Item 14: production settings refuse to serve /metrics at all until a token is set."""
    script = """
import django, json
django.setup()
from django.test import Client
c = Client(HTTP_HOST="labgpu.example.org", HTTP_X_FORWARDED_PROTO="https")
r = c.get("/metrics")
print(json.dumps({"status": r.status_code, "body": r.json()}))
"""
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=BACKEND,
        env=production_env(DJANGO_SETTINGS_MODULE="config.settings"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer == {
        "status": 404,
        "body": {
            "message": "Metrics are off: set LABGPU_METRICS_TOKEN to serve them.",
            "code": "metrics_disabled",
            "extra": {},
        },
    }


def test_admin_login_through_gunicorn_is_throttled(live_gunicorn, db):
    """Item 4 on the real stack: the admin's form, not only the API, runs out of attempts."""
    live_gunicorn.clear_cache()
    UserFactory(username="carol", is_staff=True)
    statuses = []
    with live_gunicorn.client() as http:
        page = http.get("/admin/login/")
        csrf = page.cookies["csrftoken"]
        token = page.text.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
        for n in range(12):
            response = http.post(
                "/admin/login/",
                data={"username": "carol", "password": f"guess-{n}", "csrfmiddlewaretoken": token},
                headers={"Cookie": f"csrftoken={csrf}", "X-Forwarded-For": f"198.51.100.{n}"},
            )
            statuses.append(response.status_code)
    live_gunicorn.clear_cache()
    assert statuses[:5] == [200] * 5 and statuses[-1] == 429, statuses

"""Production settings, CSP, login throttling, and provider tokens that never leak."""

from __future__ import annotations

import json
import logging
import os
import secrets
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from django.core.cache import cache

from conftest import client_for
from labgpu.catalog.models import ProviderAccount
from labgpu.ops.logging import ContextFilter, JsonFormatter
from labgpu.provisioning.drivers import driver_for

BACKEND = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.security


def production_env(**extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "LABGPU_")) and key != "PYTEST_CURRENT_TEST"
    }
    env.update(
        LABGPU_PRODUCTION="1",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="labgpu.example.org",
        DJANGO_CSRF_TRUSTED_ORIGINS="https://labgpu.example.org",
        **extra,
    )
    return env


@pytest.mark.slow
def test_production_settings_pass_check_deploy():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=BACKEND,
        env=production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_production_refuses_to_start_without_a_secret_key():
    env = production_env()
    del env["DJANGO_SECRET_KEY"]
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=BACKEND,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0 and "DJANGO_SECRET_KEY must be set" in result.stderr


@pytest.mark.slow
def test_production_answers_with_csp_hsts_and_the_spa_and_swagger_fit_the_policy():
    script = """
import django, json, re
django.setup()
from django.test import Client
from django.conf import settings
c = Client(HTTP_HOST="labgpu.example.org", HTTP_X_FORWARDED_PROTO="https")
out = {}
for path in ("/", "/api/docs/", "/api/redoc/", "/healthz"):
    r = c.get(path)
    raw = b"".join(r.streaming_content) if r.streaming else r.content
    out[path] = {"status": r.status_code, "csp": r.get("Content-Security-Policy", ""),
                 "hsts": r.get("Strict-Transport-Security", ""),
                 "body": raw.decode() if r.get("Content-Type", "").startswith("text/html")
                 else ""}
out["plain_http_healthz"] = Client(HTTP_HOST="labgpu.example.org").get("/healthz").status_code
print(json.dumps(out))
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
    pages = json.loads(result.stdout.strip().splitlines()[-1])
    for path in ("/", "/api/docs/", "/healthz"):
        assert pages[path]["status"] == 200, path
        csp = pages[path]["csp"]
        assert "script-src 'self'" in csp and "style-src 'self'" in csp, path
        assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
        assert pages[path]["hsts"].startswith("max-age=31536000")
    assert "style-src 'self' 'unsafe-inline'" in pages["/api/redoc/"]["csp"]
    assert "script-src 'self';" in pages["/api/redoc/"]["csp"]
    # Self-hosted scripts only: no inline <script> bodies and no other origin.
    for path in ("/", "/api/docs/"):
        body = pages[path]["body"]
        assert "<script>" not in body.replace(" ", ""), path
        assert "cdn." not in body and "https://" not in body.split("<body", 1)[0], path
    assert pages["plain_http_healthz"] == 200  # probes are exempt from the HTTPS redirect


@pytest.mark.django_db
def test_login_is_throttled_to_ten_attempts_a_minute(client, alice):
    """Per client address; other accounts each time, so the per-account back-off stays out of it
    (labgpu/accounts/tests/test_login_limits.py)."""
    cache.clear()
    statuses = [
        client.post(
            "/api/v1/auth/login/",
            {"username": f"user{n}", "password": "wrong"},
            content_type="application/json",
        ).status_code
        for n in range(11)
    ]
    assert statuses[:10] == [401] * 10
    assert statuses[10] == 429
    response = client.post(
        "/api/v1/auth/login/",
        {"username": "alice", "password": "wrong"},
        content_type="application/json",
    )
    assert response.status_code == 429 and response.json()["code"] == "throttled"
    assert int(response["Retry-After"]) > 0
    cache.clear()


LEAK = "dop_v1_" + "LEAKCANARY" + secrets.token_hex(16)


class _Recorder(BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:
        _Recorder.seen.append(self.headers.get("Authorization", ""))
        status = 401 if "unauthorised" in self.path else 200
        body = json.dumps(
            {"droplets": [], "links": {}, "meta": {"total": 0}}
            if status == 200
            else {"id": "unauthorized", "message": "Unable to authenticate you"}
        ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.django_db
def test_the_provider_token_never_appears_in_an_api_response_or_a_log_line(
    carol, bob, monkeypatch, caplog
):
    server = HTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_port}"
    monkeypatch.setenv("LABGPU_PROVIDER_TOKEN_LEAK_TEST", LEAK)
    caplog.set_level(logging.DEBUG)
    logging.getLogger().setLevel(logging.DEBUG)
    bodies: list[str] = []
    try:
        admin = client_for(carol)
        created = admin.post(
            "/api/v1/provider-accounts/",
            {
                "name": "Leak test",
                "kind": "emulator",
                "api_base_url": base_url,
                "token_env_var": "LABGPU_PROVIDER_TOKEN_LEAK_TEST",
            },
        )
        assert created.status_code == 201, created.content
        account_id = created.json()["id"]
        responses = [
            created,
            admin.get("/api/v1/provider-accounts/"),
            admin.get(f"/api/v1/provider-accounts/{account_id}/"),
            admin.patch(f"/api/v1/provider-accounts/{account_id}/", {"name": "Leak test 2"}),
            client_for(bob).get(f"/api/v1/provider-accounts/{account_id}/"),
            admin.get("/api/v1/instance-types/"),
            admin.get("/api/v1/pools/"),
            admin.get("/api/schema/"),
        ]
        bodies += [r.content.decode(errors="replace") for r in responses]
        account = ProviderAccount.objects.get(pk=account_id)
        with driver_for(account) as driver:
            assert driver.list_ours() == []
            from labgpu.providers import ProviderPermanentError

            with pytest.raises(ProviderPermanentError) as failure:
                driver._request("GET", "/v2/droplets/unauthorised")
            bodies.append(str(failure.value))
            bodies.append(repr(driver))
    finally:
        server.shutdown()
        logging.getLogger().setLevel(logging.INFO)
    assert any(LEAK in header for header in _Recorder.seen), "the driver must send the token"
    for body in bodies:
        assert LEAK not in body
    formatter, context = JsonFormatter(), ContextFilter()
    assert caplog.records, "nothing was logged at DEBUG"
    for record in caplog.records:
        context.filter(record)
        assert LEAK not in formatter.format(record), record.name
        assert LEAK not in repr(record.args)

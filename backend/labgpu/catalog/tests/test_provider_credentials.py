"""Issue 11 item 2: a site admin cannot send a server secret to a host of their choosing.

Token variables must be named LABGPU_PROVIDER_TOKEN_*; tokens go to https://api.digitalocean.com
or an origin LABGPU_PROVIDER_ALLOWED_BASE_URLS lists. Checked on save and again where the driver
reads the environment, so an old row written before the rule cannot leak anything.
"""

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from django.core.exceptions import ValidationError

from labgpu.catalog.models import ProviderAccount
from labgpu.providers import ProviderPermanentError
from labgpu.provisioning import tasks
from labgpu.provisioning.drivers import driver_for

pytestmark = pytest.mark.django_db

SECRET = "server-secret-that-must-stay-home"


class _Recorder(BaseHTTPRequestHandler):
    """A host that would love to receive a bearer token; records every Authorization header."""

    seen: list[str] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Authorization", ""))
        body = b'{"droplets": [], "links": {}, "meta": {"total": 0}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recorder():
    _Recorder.seen = []
    server = HTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.mark.parametrize("name", ["DJANGO_SECRET_KEY", "DATABASE_URL", "LABGPU_METRICS_TOKEN"])
def test_I9_provider_account_cannot_name_a_server_secret_as_its_token(as_carol, name):
    response = as_carol.post(
        "/api/v1/provider-accounts/",
        {"name": "DO", "kind": "digitalocean", "token_env_var": name},
        format="json",
    )
    assert response.status_code == 400
    assert "LABGPU_PROVIDER_TOKEN_" in response.json()["extra"]["fields"]["token_env_var"][0]
    assert not ProviderAccount.objects.filter(name="DO").exists()


@pytest.mark.parametrize(
    "url",
    [
        "https://attacker.example",
        "https://api.digitalocean.com.attacker.example",
        "https://user:pw@api.digitalocean.com",
        "https://api.digitalocean.com/v2/../../elsewhere",
        "http://api.digitalocean.com",
        "https://api.digitalocean.com:8443",
    ],
)
def test_I9_provider_account_cannot_send_its_token_to_an_arbitrary_host(as_carol, url):
    response = as_carol.post(
        "/api/v1/provider-accounts/",
        {
            "name": "DO",
            "kind": "digitalocean",
            "api_base_url": url,
            "token_env_var": "LABGPU_PROVIDER_TOKEN_DIGITALOCEAN",
        },
        format="json",
    )
    assert response.status_code == 400
    assert "api_base_url" in response.json()["extra"]["fields"]
    assert not ProviderAccount.objects.filter(name="DO").exists()


def test_provider_account_accepts_digitalocean_and_the_operators_listed_origins(as_carol, settings):
    settings.LABGPU_PROVIDER_ALLOWED_BASE_URLS = ["http://emulator:8010"]
    for name, url in [("DO", "https://api.digitalocean.com"), ("Emu", "http://emulator:8010")]:
        response = as_carol.post(
            "/api/v1/provider-accounts/",
            {
                "name": name,
                "kind": "emulator",
                "api_base_url": url,
                "token_env_var": "LABGPU_PROVIDER_TOKEN_X",
            },
            format="json",
        )
        assert response.status_code == 201, response.content
    other_port = as_carol.post(
        "/api/v1/provider-accounts/",
        {
            "name": "Emu2",
            "kind": "emulator",
            "api_base_url": "http://emulator:9999",
            "token_env_var": "LABGPU_PROVIDER_TOKEN_X",
        },
        format="json",
    )
    assert other_port.status_code == 400


def test_admin_form_validation_refuses_a_server_secret_and_a_foreign_host():
    account = ProviderAccount(
        name="Admin form",
        kind="digitalocean",
        api_base_url="https://attacker.example",
        token_env_var="DJANGO_SECRET_KEY",
    )
    with pytest.raises(ValidationError) as refused:
        account.full_clean()  # what the admin's ModelForm runs
    assert {"api_base_url", "token_env_var"} <= set(refused.value.message_dict)


def test_token_configured_does_not_reveal_whether_other_variables_exist(as_carol, monkeypatch):
    monkeypatch.setenv("SOME_SERVER_SECRET", SECRET)
    ProviderAccount.objects.create(
        name="Old row", kind="digitalocean", token_env_var="SOME_SERVER_SECRET"
    )
    (row,) = as_carol.get("/api/v1/provider-accounts/").json()["results"]
    assert row["token_configured"] is False
    assert SECRET not in str(row)


def test_an_old_row_naming_a_server_secret_never_sends_it(recorder, monkeypatch):
    """A row written before the rule (straight into the DB) still cannot read the secret."""
    monkeypatch.setenv("SOME_SERVER_SECRET", SECRET)
    account = ProviderAccount.objects.create(
        name="Old row", kind="emulator", api_base_url=recorder, token_env_var="SOME_SERVER_SECRET"
    )
    with pytest.raises(ProviderPermanentError, match="LABGPU_PROVIDER_TOKEN_"):
        driver_for(account)
    assert tasks.reconcile_all() == 0  # the beat's sweep skips it
    with pytest.raises(ProviderPermanentError):
        tasks.reconcile(account.pk)  # and a queued reconcile refuses it
    assert _Recorder.seen == []


def test_an_old_row_pointing_at_an_unlisted_host_never_gets_the_token(
    recorder, monkeypatch, settings
):
    monkeypatch.setenv("LABGPU_PROVIDER_TOKEN_OLD", SECRET)
    account = ProviderAccount.objects.create(
        name="Old row",
        kind="emulator",
        api_base_url=recorder,
        token_env_var="LABGPU_PROVIDER_TOKEN_OLD",
    )
    settings.LABGPU_PROVIDER_ALLOWED_BASE_URLS = []  # production: DigitalOcean only
    with pytest.raises(ProviderPermanentError, match="LABGPU_PROVIDER_ALLOWED_BASE_URLS"):
        driver_for(account)
    assert tasks.reconcile_all() == 0
    assert _Recorder.seen == []

    settings.LABGPU_PROVIDER_ALLOWED_BASE_URLS = [recorder]  # listed: the token goes there
    with driver_for(account) as driver:
        assert driver.list_ours() == []
    assert _Recorder.seen == [f"Bearer {SECRET}"]

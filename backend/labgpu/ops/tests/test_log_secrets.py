"""No secret in any log line (issue 22, item 6): a delivery of every chat kind, an OpenID Connect
sign-in against the real test OP and provider calls against the emulator, with INFO logging as
settings.LOGGING configures it; every line the console handler wrote is searched for each secret.
And gunicorn's access log, for the callback's `code` and `state`."""

import io
import logging
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from emulator.pytest_fixtures import emulator, emulator_server  # noqa: F401
from labgpu.chat import services
from labgpu.chat.tests.receiver import receiver
from labgpu.ops.tests.test_gunicorn import wait_for_line
from labgpu.providers import driver_from_settings
from labgpu.sso.tests.conftest import oidc_on, openid_provider  # noqa: F401
from labgpu.sso.tests.op_server import CLIENT_SECRET, walk_sign_in
from labgpu.sso.tests.test_oidc import signed_in_as, start_sign_in

pytestmark = [pytest.mark.django_db, pytest.mark.security, pytest.mark.slow]

SLACK_TOKEN = "SlackPathTok3nXXXXXXXXXXXX"
FEISHU_HOOK = "feishu-hook-0a1b2c3d-4e5f-6789"
FEISHU_SECRET = "feishuSignSecret0123"
DINGTALK_TOKEN = "dingtalkAccessToken0123456789"
DINGTALK_SECRET = "SECdingtalk0123456789abcdef"
WECOM_KEY = "wecom-key-693a91f6-7xxx-4bc4"
WEBHOOK_TOKEN = "GenericWebhookTok3n0123456789"
WEBHOOK_SECRET = "generic-signing-secret-0123456789"
PROVIDER_TOKEN = "dop_v1_" + "5e" * 32


@pytest.fixture
def console_lines(settings):
    """What settings.LOGGING's console handler writes, at INFO."""
    root = logging.getLogger()
    console = next(h for h in root.handlers if h.get_name() == "console")
    buffer = io.StringIO()
    previous_stream, previous_level = console.setStream(buffer), root.level
    root.setLevel(logging.INFO)
    yield lambda: buffer.getvalue().splitlines()
    console.setStream(previous_stream)
    root.setLevel(previous_level)


def assert_no_secret(lines: list[str], secrets: list[str]) -> None:
    assert lines, "nothing was logged: the test would prove nothing"
    for secret in secrets:
        leaks = [line for line in lines if secret in line]
        assert not leaks, f"{secret!r} in the log: {leaks[:3]}"


def test_chat_deliveries_of_every_kind_log_no_secret(alice, settings, console_lines):
    settings.LABGPU_CHAT_ALLOW_LOOPBACK = True
    with receiver() as sink:
        base = sink.base_url
        channels = [
            ("slack", f"{base}/services/T0AAAAAAA/B0BBBBBBB/{SLACK_TOKEN}", ""),
            ("feishu", f"{base}/open-apis/bot/v2/hook/{FEISHU_HOOK}", FEISHU_SECRET),
            ("dingtalk", f"{base}/robot/send?access_token={DINGTALK_TOKEN}", DINGTALK_SECRET),
            ("wecom", f"{base}/cgi-bin/webhook/send?key={WECOM_KEY}", ""),
            ("webhook", f"{base}/hooks/{WEBHOOK_TOKEN}", WEBHOOK_SECRET),
        ]
        # Each kind once taken, once refused (the failure path logs a warning with the error).
        sink.answers = [(200, b"ok")] * len(channels) + [(500, b"down")] * len(channels)
        for attempt in range(2):
            for kind, url, secret in channels:
                channel = services.channel_create(
                    actor=alice, kind=kind, name=f"{kind}{attempt}", url=url, secret=secret
                )
                delivery = services.channel_test(actor=alice, channel=channel)
                services.delivery_attempt(delivery_id=delivery.pk)
        signs = [r.query["sign"][0] for r in sink.requests if "sign" in r.query]
        signs += [r.json()["sign"] for r in sink.requests if r.body and b'"sign"' in r.body]
    lines = console_lines()
    assert any("HTTP Request: POST" in line for line in lines)  # httpx logged each request
    assert len(signs) == 4
    assert_no_secret(
        lines,
        [
            *(SLACK_TOKEN, FEISHU_HOOK, FEISHU_SECRET, DINGTALK_TOKEN, DINGTALK_SECRET),
            *(WECOM_KEY, WEBHOOK_TOKEN, WEBHOOK_SECRET, *signs),
        ],
    )


def test_an_oidc_sign_in_logs_no_secret(oidc_on, console_lines):  # noqa: F811
    client = Client()
    callback = walk_sign_in(start_sign_in(client), "dana")
    query = parse_qs(urlsplit(callback).query)
    client.get(urlsplit(callback).path, query)
    assert signed_in_as(client) == "dana"
    lines = console_lines()
    assert any("HTTP Request: POST" in line and "/token" in line for line in lines)
    assert_no_secret(lines, [query["code"][0], query["state"][0], CLIENT_SECRET, "eyJ"])


def test_provider_calls_log_no_token(emulator, monkeypatch, console_lines):  # noqa: F811
    monkeypatch.setenv("LABGPU_PROVIDER_TOKEN_LOGTEST", PROVIDER_TOKEN)
    driver = driver_from_settings(
        kind="emulator", base_url=emulator.url, credential_env="LABGPU_PROVIDER_TOKEN_LOGTEST"
    )
    driver.sizes()
    list(driver.list_gpu_droplets())
    # A careless line naming the request headers: the filter still keeps the token out.
    logging.getLogger("labgpu.test").warning("headers %s", dict(driver._client.headers))
    lines = console_lines()
    assert any("HTTP Request: GET" in line for line in lines)
    assert_no_secret(lines, [PROVIDER_TOKEN, PROVIDER_TOKEN[7:]])


def test_the_oidc_callbacks_code_and_state_never_reach_gunicorns_access_log(live_gunicorn):
    code, state = "SplxlOBeZQQYbYS6WxSbIA", "af0ifjsldkj-state-value"
    with live_gunicorn.client() as http:
        http.get(f"/oidc/callback/?code={code}&state={state}")
        http.get("/api/v1/me/", headers={"Authorization": "Basic ZGFuYTpzZWNyZXRwYXNz"})
    log = wait_for_line(live_gunicorn, "/oidc/callback/?code=[redacted]&state=[redacted]")
    assert code not in log and state not in log
    assert "ZGFuYTpzZWNyZXRwYXNz" not in log

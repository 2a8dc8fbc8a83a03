"""Chat deliveries go out through the one egress policy (labgpu.egress.POLICY): checked when a
channel is saved, checked again and pinned at each send (issue 22's SSRF findings)."""

import socket

import pytest

from labgpu.chat import services
from labgpu.chat.models import ChatChannel
from labgpu.chat.tests.receiver import receiver

pytestmark = pytest.mark.security

SECRET = "SECtest-signing-secret-0123456789"


@pytest.mark.parametrize(
    "url",
    [
        "https://[64:ff9b::a9fe:a9fe]/latest/meta-data",
        "https://[::127.0.0.1]/in",
        "https://[::169.254.169.254]/in",
        "https://[64:ff9b::10.0.0.1]/in",
        "https://[::ffff:0:a9fe:a9fe]/in",
        "https://2852039166/in",
        "https://internal.example/in",
    ],
)
def test_a_webhook_on_an_internal_address_in_any_form_is_refused_when_saved(
    as_alice, settings, hostile_dns, url
):
    settings.LABGPU_CHAT_ALLOW_LOOPBACK = False
    hostile_dns.answers["internal.example"] = ["10.0.0.5"]
    response = as_alice.post(
        "/api/v1/chat-channels/",
        {"kind": "webhook", "name": "x", "url": url, "secret": SECRET},
        format="json",
    )
    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "invalid_webhook_url"
    assert not ChatChannel.objects.exists()


def test_a_name_rebound_inside_after_the_save_is_refused_at_send_without_connecting(
    alice, settings, hostile_dns
):
    settings.LABGPU_CHAT_ALLOW_LOOPBACK = False
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    hostile_dns.answers["hooks.example"] = ["93.184.215.14"]
    channel = services.channel_create(
        actor=alice, kind="webhook", name="x", url=f"https://hooks.example:{port}/in", secret=SECRET
    )
    hostile_dns.answers["hooks.example"] = ["::ffff:127.0.0.1"]  # DNS rebinding
    delivery = services.channel_test(actor=alice, channel=channel)
    assert services.delivery_attempt(delivery_id=delivery.pk) is None  # final, no retry
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 1)
    assert delivery.error.startswith("EgressRefused")
    with pytest.raises(BlockingIOError):
        listener.accept()  # nobody connected to the rebound address
    listener.close()


def test_a_generic_webhooks_reply_is_not_echoed_in_the_delivery_log(alice, settings):
    settings.LABGPU_CHAT_ALLOW_LOOPBACK = True
    with receiver() as sink:
        sink.answers = [(500, b"aws-secret-access-key=AKIAFROMTHEREPLY")]
        channel = services.channel_create(
            actor=alice, kind="webhook", name="x", url=f"{sink.base_url}/in", secret=SECRET
        )
        delivery = services.channel_test(actor=alice, channel=channel)
        services.delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert delivery.error == "HTTP 500"

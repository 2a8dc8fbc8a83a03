"""Chat channels against local receivers that check each platform's documented payload and
signature (docs/chat.md cites the documentation). The signatures are recomputed here from the
documented recipes, not with labgpu.chat.kinds' own functions."""

import base64
import hashlib
import hmac
import time
import urllib.parse

import pytest

from labgpu.bookings import notifications
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.chat import services
from labgpu.chat.models import ChatChannel, ChatDelivery
from labgpu.chat.tests.receiver import receiver
from labgpu.core.models import OutboxMessage

SECRET = "SECtest-signing-secret-0123456789"


@pytest.fixture(autouse=True)
def _loopback_allowed(settings):
    settings.LABGPU_CHAT_ALLOW_LOOPBACK = True
    settings.LABGPU_CHAT_MAX_ATTEMPTS = 3
    settings.LABGPU_CHAT_RETRY_BASE_S = 30


@pytest.fixture
def sink():
    with receiver() as state:
        yield state


@pytest.fixture
def channel_at(sink):
    """`channel_at(actor, path, kind="slack", name="me", **fields)`: a channel posting to the local
    receiver at `path`; a generic webhook signs with SECRET unless given another secret."""

    def make(actor, path="/services/a/b/c", *, kind="slack", name="me", **fields):
        if kind == "webhook":
            fields.setdefault("secret", SECRET)
        return services.channel_create(
            actor=actor, kind=kind, name=name, url=f"{sink.base_url}{path}", **fields
        )

    return make


def _send_test(channel: ChatChannel, actor) -> ChatDelivery:
    delivery = services.channel_test(actor=actor, channel=channel)
    assert services.delivery_attempt(delivery_id=delivery.pk) is None
    delivery.refresh_from_db()
    return delivery


def test_slack_gets_a_text_message(alice, sink, channel_at):
    channel = channel_at(alice, "/services/T0/B0/XYZ")
    delivery = _send_test(channel, alice)
    assert delivery.status == "sent" and delivery.http_status == 200
    (request,) = sink.requests
    assert request.path == "/services/T0/B0/XYZ"
    assert request.headers["content-type"].startswith("application/json")
    assert "LabGPU test message" in request.json()["text"]


def test_feishu_gets_its_signature_over_timestamp_and_secret(alice, sink, channel_at):
    sink.answers = [(200, b'{"code":0,"msg":"success"}')]
    channel = channel_at(
        alice,
        "/open-apis/bot/v2/hook/abc-123",
        kind="feishu",
        name="feishu",
        secret=SECRET,
    )
    assert _send_test(channel, alice).status == "sent"
    body = sink.requests[0].json()
    assert body["msg_type"] == "post"
    assert "LabGPU" in body["content"]["post"]["zh_cn"]["title"]
    # Feishu: key = "<timestamp>\n<secret>", message empty, base64; timestamp in seconds.
    assert abs(int(body["timestamp"]) - time.time()) < 3600
    key = f"{body['timestamp']}\n{SECRET}".encode()
    expected = base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()
    assert body["sign"] == expected


def test_feishu_refusal_inside_a_200_is_a_failed_delivery(alice, sink, channel_at):
    sink.answers = [(200, b'{"code":19021,"msg":"sign match fail"}')]
    channel = channel_at(alice, "/open-apis/bot/v2/hook/x", kind="feishu", name="f")
    delivery = _send_test(channel, alice)
    assert delivery.status == "failed"
    assert delivery.error.startswith("19021")


def test_dingtalk_gets_timestamp_and_sign_query_parameters(alice, sink, channel_at):
    sink.answers = [(200, b'{"errcode":0,"errmsg":"ok"}')]
    channel = channel_at(
        alice,
        "/robot/send?access_token=tok123",
        kind="dingtalk",
        name="ding",
        secret=SECRET,
        language="zh-hans",
    )
    assert _send_test(channel, alice).status == "sent"
    request = sink.requests[0]
    assert request.query["access_token"] == ["tok123"]
    (timestamp,) = request.query["timestamp"]
    assert abs(int(timestamp) / 1000 - time.time()) < 3600  # milliseconds
    # DingTalk: HMAC-SHA256 keyed with the secret over "<timestamp>\n<secret>", base64, URL-encoded.
    digest = hmac.new(SECRET.encode(), f"{timestamp}\n{SECRET}".encode(), hashlib.sha256).digest()
    assert request.query["sign"] == [base64.b64encode(digest).decode()]  # parse_qs decoded it
    body = request.json()
    assert body["msgtype"] == "text"
    assert "LabGPU 测试消息" in body["text"]["content"]  # the channel reads Chinese


def test_wecom_gets_text_within_its_size_limit(alice, sink, channel_at):
    sink.answers = [(200, b'{"errcode":0,"errmsg":"ok"}')]
    channel = channel_at(alice, "/cgi-bin/webhook/send?key=k-1", kind="wecom", name="wecom")
    services.chat_notify(
        "booking_failed", user=alice, context={"booking_id": 1, "reason": "长" * 3000}
    )
    delivery = ChatDelivery.objects.get(channel=channel)
    assert services.delivery_attempt(delivery_id=delivery.pk) is None
    delivery.refresh_from_db()
    assert delivery.status == "sent"
    request = sink.requests[0]
    assert request.query["key"] == ["k-1"]
    body = request.json()
    assert body["msgtype"] == "text"
    assert len(body["text"]["content"].encode()) <= 2048


def test_generic_webhook_is_signed_over_timestamp_and_body(alice, sink, channel_at):
    channel = channel_at(alice, "/in", kind="webhook", name="hook")
    assert _send_test(channel, alice).status == "sent"
    request = sink.requests[0]
    header = dict(part.split("=", 1) for part in request.headers["x-labgpu-signature"].split(","))
    signed = header["t"].encode() + b"." + request.body
    assert header["v1"] == hmac.new(SECRET.encode(), signed, hashlib.sha256).hexdigest()
    body = request.json()
    assert body["event"] == "test" and body["title"] == "LabGPU test message"


def test_a_server_error_is_retried_with_growing_back_off_then_sent(alice, sink, channel_at):
    sink.answers = [(500, b"oops"), (503, b"busy"), (200, b"ok")]
    channel = channel_at(alice)
    delivery = services.channel_test(actor=alice, channel=channel)
    assert services.delivery_attempt(delivery_id=delivery.pk) == 30
    assert services.delivery_attempt(delivery_id=delivery.pk) == 60
    assert services.delivery_attempt(delivery_id=delivery.pk) is None
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.http_status) == ("sent", 3, 200)
    # Run once more (a duplicate task): nothing is sent again.
    assert services.delivery_attempt(delivery_id=delivery.pk) is None
    assert len(sink.requests) == 3


def test_delivery_gives_up_after_the_last_attempt_and_at_once_on_a_4xx(alice, sink, channel_at):
    sink.answers = [(500, b"down")]
    channel = channel_at(alice)
    delivery = services.channel_test(actor=alice, channel=channel)
    while services.delivery_attempt(delivery_id=delivery.pk) is not None:
        pass
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 3)
    sink.answers = [(404, b"no_team")]
    gone = services.channel_test(actor=alice, channel=channel)
    assert services.delivery_attempt(delivery_id=gone.pk) is None
    gone.refresh_from_db()
    assert (gone.status, gone.attempts, gone.http_status) == ("failed", 1, 404)
    assert "no_team" in gone.error


def test_test_message_goes_through_the_outbox_to_the_delivery_task(alice, channel_at):
    channel = channel_at(alice)
    delivery = services.channel_test(actor=alice, channel=channel)
    assert OutboxMessage.objects.filter(
        task="labgpu.chat.tasks.deliver_chat_message", args=[delivery.pk]
    ).exists()


def test_events_reach_the_owner_and_lab_channels_that_subscribe(
    alice, bob, mallory, vision_lab, channel_at
):
    mine = channel_at(alice, "/a", kind="webhook", name="mine")
    quiet = channel_at(alice, "/b", kind="webhook", name="quiet", events=["quota_threshold"])
    lab = channel_at(bob, "/c", kind="webhook", name="lab", lab=vision_lab)
    other = channel_at(mallory, "/d", kind="webhook", name="other")
    booking = BookingFactory(user=alice, lab=vision_lab, failure_reason="no capacity")
    notifications.booking_failed(booking)
    got = set(ChatDelivery.objects.values_list("channel_id", flat=True))
    assert got == {mine.pk, lab.pk}
    assert quiet.pk not in got and other.pk not in got
    delivery = ChatDelivery.objects.get(channel=mine)
    assert delivery.event == "booking_failed"
    assert f"#{booking.pk}" in delivery.title and "no capacity" in delivery.text


def test_approval_needed_reaches_the_lab_channel(alice, bob, vision_lab, channel_at):
    lab = channel_at(
        bob,
        "/c",
        kind="webhook",
        name="lab",
        lab=vision_lab,
        language="zh-hans",
        timezone="Asia/Shanghai",
    )
    booking = BookingFactory(user=alice, lab=vision_lab, status="pending")
    notifications.booking_approval_needed(booking)
    delivery = ChatDelivery.objects.get(channel=lab)
    assert delivery.event == "approval_needed"
    assert "需要审批" in delivery.title
    assert "Asia/Shanghai，UTC+08:00" in delivery.text


def test_approval_needed_reaches_each_lab_admins_own_channels_in_their_language(
    alice, bob, mallory, vision_lab, sink, channel_at
):
    """Not only the lab's channels: each of its lab admins hears of a booking to approve on their
    own channels, in the language each channel reads. Members, other labs' people and the one who
    asked (no self-approval) do not."""
    from labgpu.accounts.models import Membership
    from labgpu.accounts.tests.factories import MembershipFactory, UserFactory

    bob.language = "zh-hans"
    bob.save(update_fields=["language"])
    vera = UserFactory(username="vera", language="en")
    MembershipFactory(user=vera, lab=vision_lab, role=Membership.Role.LAB_ADMIN)
    for person in (alice, bob, vera, mallory):
        channel_at(person, f"/{person.username}", kind="webhook", name=person.username)

    booking = BookingFactory(user=alice, lab=vision_lab, status="pending")
    notifications.booking_approval_needed(booking)
    for delivery in ChatDelivery.objects.all():
        assert services.delivery_attempt(delivery_id=delivery.pk) is None
    received = {request.path: request.json() for request in sink.requests}
    assert set(received) == {"/bob", "/vera"}
    assert received["/bob"]["event"] == received["/vera"]["event"] == "approval_needed"
    assert received["/bob"]["title"] == f"预约 #{booking.pk} 需要审批"
    assert received["/vera"]["title"] == f"Booking #{booking.pk} needs approval"

    own = BookingFactory(user=bob, lab=vision_lab, status="pending")
    notifications.booking_approval_needed(own)
    asked = ChatDelivery.objects.filter(title__contains=f"#{own.pk}")
    assert [d.channel.name for d in asked] == ["vera"]


def test_quota_threshold_reaches_the_lab_and_its_admins_own_channels(
    alice, bob, vision_lab, instance_type, channel_at
):
    from datetime import date

    lab = channel_at(bob, "/lab", kind="webhook", name="lab", lab=vision_lab)
    bobs = channel_at(bob, "/bob", kind="webhook", name="bob", language="zh-hans")
    alices = channel_at(alice, "/alice", kind="webhook", name="alice")
    notifications.quota_threshold(
        lab=vision_lab,
        instance_type=instance_type,
        month=date(2026, 12, 1),
        percent=80,
        recipients=[bob],
    )
    got = {d.channel_id: d for d in ChatDelivery.objects.filter(event="quota_threshold")}
    assert set(got) == {lab.pk, bobs.pk} and alices.pk not in got
    assert "80" in got[bobs.pk].title and vision_lab.name in got[bobs.pk].title


def test_ready_message_carries_the_ssh_command(alice, vision_lab, channel_at):
    mine = channel_at(alice)
    booking = BookingFactory(user=alice, lab=vision_lab, status="ready")
    notifications.booking_ready(booking)
    delivery = ChatDelivery.objects.get(channel=mine)
    assert delivery.event == "booking_ready"
    assert "Connect with" in delivery.text


# --- The API ------------------------------------------------------------------------------------


def test_secret_and_url_are_stored_encrypted_and_never_returned(as_alice, sink):
    url = f"{sink.base_url}/services/T0/B0/SECRETPART"
    response = as_alice.post(
        "/api/v1/chat-channels/",
        {"kind": "slack", "name": "mine", "url": url},
        format="json",
    )
    assert response.status_code == 201, response.json()
    data = response.json()
    assert "url" not in data and "secret" not in data and "SECRETPART" not in str(data)
    assert data["hint"].endswith("PART")
    row = ChatChannel.objects.get(pk=data["id"])
    assert "SECRETPART" not in row.secret_box
    listed = as_alice.get("/api/v1/chat-channels/").json()
    assert "SECRETPART" not in str(listed)
    detail = as_alice.get(f"/api/v1/chat-channels/{data['id']}/").json()
    assert "SECRETPART" not in str(detail)


@pytest.mark.parametrize(
    ("kind", "url", "secret", "field"),
    [
        ("slack", "https://hooks.slack.com.evil.example/services/a/b/c", "", "url"),
        ("slack", "http://hooks.slack.com/services/a/b/c", "", "url"),
        ("slack", "https://hooks.slack.com/api/other", "", "url"),
        ("feishu", "https://open.feishu.cn.evil/open-apis/bot/v2/hook/x", "", "url"),
        ("dingtalk", "https://oapi.dingtalk.com/robot/send", "", "url"),
        ("wecom", "https://qyapi.weixin.qq.com/cgi-bin/webhook/send", "", "url"),
        ("wecom", "https://user:pw@qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k", "", "url"),
        ("webhook", "https://10.0.0.1/in", SECRET, "url"),
        ("webhook", "https://169.254.169.254/latest/meta-data", SECRET, "url"),
        ("webhook", "http://127.0.0.1:9/in", SECRET, "url"),
        ("webhook", "file:///etc/passwd", SECRET, "url"),
        ("webhook", "https://example.org/" + "a" * 3000, SECRET, "url"),
        ("webhook", "https://example.org/in", "short", "secret"),
        ("telegram", "https://example.org/in", "", "kind"),
    ],
)
def test_hostile_channel_input_is_a_400_naming_the_field(
    as_alice, settings, kind, url, secret, field
):
    settings.LABGPU_CHAT_ALLOW_LOOPBACK = False
    response = as_alice.post(
        "/api/v1/chat-channels/",
        {"kind": kind, "name": "x", "url": url, "secret": secret},
        format="json",
    )
    assert response.status_code == 400, response.json()
    assert field in response.json()["extra"]["fields"]
    assert not ChatChannel.objects.exists()


def test_a_huge_body_is_refused(as_alice):
    response = as_alice.post(
        "/api/v1/chat-channels/",
        {"kind": "slack", "name": "x" * 100_000, "url": "https://hooks.slack.com/services/a"},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["code"] == "request_too_large"


def test_unknown_events_are_refused(as_alice, sink):
    response = as_alice.post(
        "/api/v1/chat-channels/",
        {
            "kind": "slack",
            "name": "x",
            "url": f"{sink.base_url}/services/a/b/c",
            "events": ["booking_ready", "nope"],
        },
        format="json",
    )
    assert response.status_code == 400
    assert "events" in response.json()["extra"]["fields"]


def test_only_lab_admins_add_lab_channels_and_others_never_see_them(
    as_alice, as_bob, as_mallory, vision_lab, sink
):
    body = {"kind": "slack", "name": "lab", "url": f"{sink.base_url}/services/a/b/c"}
    refused = as_alice.post("/api/v1/chat-channels/", {**body, "lab": vision_lab.pk}, format="json")
    assert refused.status_code == 403
    created = as_bob.post("/api/v1/chat-channels/", {**body, "lab": vision_lab.pk}, format="json")
    assert created.status_code == 201
    channel_id = created.json()["id"]
    assert created.json()["lab"] == vision_lab.pk
    assert as_alice.get("/api/v1/chat-channels/").json() == []
    assert as_mallory.get(f"/api/v1/chat-channels/{channel_id}/").status_code == 404
    assert as_mallory.delete(f"/api/v1/chat-channels/{channel_id}/").status_code == 404
    assert as_mallory.post(f"/api/v1/chat-channels/{channel_id}/test/").status_code == 404
    assert as_mallory.get(f"/api/v1/chat-channels/{channel_id}/deliveries/").status_code == 404


def test_owner_sends_a_test_message_and_reads_the_delivery_log(as_alice, sink):
    created = as_alice.post(
        "/api/v1/chat-channels/",
        {"kind": "slack", "name": "me", "url": f"{sink.base_url}/services/a/b/c"},
        format="json",
    ).json()
    queued = as_alice.post(f"/api/v1/chat-channels/{created['id']}/test/")
    assert queued.status_code == 202
    assert queued.json()["status"] == "pending"
    services.delivery_attempt(delivery_id=queued.json()["id"])
    log = as_alice.get(f"/api/v1/chat-channels/{created['id']}/deliveries/").json()
    assert [(d["event"], d["status"], d["http_status"], d["attempts"]) for d in log] == [
        ("test", "sent", 200, 1)
    ]
    assert as_alice.get("/api/v1/chat-channels/").json()[0]["last_delivery_status"] == "sent"
    assert as_alice.delete(f"/api/v1/chat-channels/{created['id']}/").status_code == 204
    assert not ChatChannel.objects.exists() and not ChatDelivery.objects.exists()


def test_channel_key_rotation_keeps_old_channels_readable(settings, alice, sink, channel_at):
    from cryptography.fernet import Fernet

    from labgpu.chat import crypto

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.LABGPU_CHANNEL_KEY = old
    channel = channel_at(alice)
    settings.LABGPU_CHANNEL_KEY = f"{new},{old}"
    assert _send_test(channel, alice).status == "sent"
    rotated = crypto.reseal(channel.secret_box)
    settings.LABGPU_CHANNEL_KEY = new
    assert crypto.unseal(rotated)["url"].endswith("/services/a/b/c")
    assert urllib.parse.urlsplit(sink.base_url).hostname == "127.0.0.1"


def test_make_run_chat_sink_prints_a_signed_message(alice, settings):
    """The demo's sink (manage.py chat_sink, in the Procfile) shows what a channel posts."""
    import socket
    import subprocess
    import sys
    from pathlib import Path

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sink = subprocess.Popen(
        [sys.executable, "manage.py", "chat_sink", "--port", str(port), "--secret", SECRET],
        cwd=Path(__file__).resolve().parents[3],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert "chat sink on" in sink.stdout.readline()
        channel = services.channel_create(
            actor=alice,
            kind="webhook",
            name="demo",
            url=f"http://127.0.0.1:{port}/x",
            secret=SECRET,
        )
        assert _send_test(channel, alice).status == "sent"
        assert "[chat sink] test (signature ok)" in sink.stdout.readline()
    finally:
        sink.terminate()
        sink.wait()


def test_a_lost_retry_is_redriven_once_overdue(alice, sink, monkeypatch, channel_at):
    from datetime import timedelta

    from labgpu.core.timeutils import now

    sink.answers = [(500, b"down"), (200, b"ok")]
    channel = channel_at(alice)
    delivery = services.channel_test(actor=alice, channel=channel)
    assert services.delivery_attempt(delivery_id=delivery.pk) == 30
    published = []
    monkeypatch.setattr(
        services, "publish_best_effort", lambda task, pk: published.append(pk) or True
    )
    assert services.deliveries_redrive() == 0  # its retry is not due yet
    ChatDelivery.objects.filter(pk=delivery.pk).update(updated_at=now() - timedelta(minutes=5))
    assert services.deliveries_redrive() == 1
    assert published == [delivery.pk]


def test_a_replaced_node_is_told_in_the_channel_language(alice, vision_lab, channel_at):
    channel = channel_at(alice, language="zh-hans")
    booking = BookingFactory(user=alice, lab=vision_lab, status="provisioning")
    notifications.booking_node_replaced(booking, reason="gpu_missing")
    delivery = ChatDelivery.objects.get(channel=channel)
    assert delivery.event == "booking_failed"
    assert "正在更换节点" in delivery.title and "gpu_missing" in delivery.text


def test_ready_message_gives_the_notebook_tunnel_but_never_its_token(alice, vision_lab, channel_at):
    from labgpu.bookings.services.notebook import booking_notebook_token
    from labgpu.provisioning.tests.factories import NodeFactory

    mine = channel_at(alice)
    booking = BookingFactory(user=alice, lab=vision_lab, status="ready", jupyter=True)
    node = NodeFactory(booking=booking, status="ready")
    token = booking_notebook_token(booking=booking)
    notifications.booking_ready(booking)
    text = ChatDelivery.objects.get(channel=mine).text
    assert f"ssh -N -L 8888:127.0.0.1:8888 root@{node.public_ip}" in text
    assert token not in text and "token=" not in text


# --- Editing a channel ----------------------------------------------------------------------------


def _webhook(client, sink, path="/old") -> dict:
    response = client.post(
        "/api/v1/chat-channels/",
        {"kind": "webhook", "name": "hook", "url": f"{sink.base_url}{path}", "secret": SECRET},
        format="json",
    )
    assert response.status_code == 201, response.json()
    return response.json()


def test_owner_edits_a_channel_and_replaces_its_secret_which_is_never_shown(as_alice, alice, sink):
    from labgpu.audit.models import AuditEvent
    from labgpu.core.timeutils import now

    created = _webhook(as_alice, sink)
    assert created["enabled"] is True
    new_secret = "another-signing-secret-0123456789"
    response = as_alice.patch(
        f"/api/v1/chat-channels/{created['id']}/",
        {
            "name": "renamed",
            "events": ["idle_warning"],
            "language": "zh-hans",
            "enabled": False,
            "url": f"{sink.base_url}/new",
            "secret": new_secret,
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    data = response.json()
    assert (data["name"], data["events"], data["language"], data["enabled"]) == (
        "renamed",
        ["idle_warning"],
        "zh-hans",
        False,
    )
    assert data["hint"].endswith("/new")
    assert "url" not in data and "secret" not in data and new_secret not in str(data)
    (event,) = AuditEvent.objects.filter(action="chat_channel.update")
    assert set(event.data["changes"]) == {"name", "events", "language", "enabled", "url", "secret"}
    assert new_secret not in str(event.data) and SECRET not in str(event.data)

    # Off: events are not posted. A test message still goes, to the new URL, signed anew.
    idle = {"booking_id": 1, "idle_minutes": 10, "ends_at": now(), "url": "http://x/b/1"}
    assert services.chat_notify("idle_warning", user=alice, context=idle) == 0
    assert _send_test(ChatChannel.objects.get(pk=created["id"]), alice).status == "sent"
    (request,) = sink.requests
    assert request.path == "/new"
    header = dict(part.split("=", 1) for part in request.headers["x-labgpu-signature"].split(","))
    signed = header["t"].encode() + b"." + request.body
    assert header["v1"] == hmac.new(new_secret.encode(), signed, hashlib.sha256).hexdigest()
    # On again: the events it subscribes to are posted.
    on = as_alice.patch(f"/api/v1/chat-channels/{created['id']}/", {"enabled": True}, format="json")
    assert on.json()["enabled"] is True
    assert services.chat_notify("idle_warning", user=alice, context=idle) == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"events": ["booking_ready", "nope"]}, "events"),
        ({"events": "booking_ready"}, "events"),
        ({"language": "fr"}, "language"),
        ({"enabled": "maybe"}, "enabled"),
        ({"enabled": None}, "enabled"),
        ({"url": "https://10.0.0.1/in"}, "url"),
        ({"url": "http://127.0.0.1:9/in"}, "url"),
        ({"url": "file:///etc/passwd"}, "url"),
        ({"url": "https://example.org/" + "a" * 3000}, "url"),
        ({"secret": "short"}, "secret"),
        ({"secret": ""}, "secret"),
        ({"secret": "s" * 201}, "secret"),
        ({"kind": "slack"}, "kind"),
        ({"lab": 1}, "lab"),
        ({"user": 1, "name": "fine"}, "user"),
    ],
)
def test_hostile_channel_edits_are_a_400_naming_the_field_and_change_nothing(
    as_alice, sink, settings, body, field
):
    from labgpu.audit.models import AuditEvent

    created = _webhook(as_alice, sink)
    before = ChatChannel.objects.values().get(pk=created["id"])
    settings.LABGPU_CHAT_ALLOW_LOOPBACK = False
    response = as_alice.patch(f"/api/v1/chat-channels/{created['id']}/", body, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["extra"]["fields"]
    assert ChatChannel.objects.values().get(pk=created["id"]) == before
    assert not AuditEvent.objects.filter(action="chat_channel.update").exists()


def test_only_the_channels_manager_edits_it(as_alice, as_bob, as_mallory, vision_lab, sink):
    mine = _webhook(as_alice, sink)
    labs = as_bob.post(
        "/api/v1/chat-channels/",
        {
            "kind": "slack",
            "name": "lab",
            "url": f"{sink.base_url}/services/a/b/c",
            "lab": vision_lab.pk,
        },
        format="json",
    ).json()

    def rename(client, channel) -> int:
        url = f"/api/v1/chat-channels/{channel['id']}/"
        return client.patch(url, {"name": "taken over"}, format="json").status_code

    assert rename(as_mallory, mine) == rename(as_bob, mine) == rename(as_alice, labs) == 404
    assert not ChatChannel.objects.filter(name="taken over").exists()
    assert rename(as_bob, labs) == 200
    not_json = as_alice.generic(
        "PATCH", f"/api/v1/chat-channels/{mine['id']}/", "{name:", content_type="application/json"
    )
    assert not_json.status_code == 400 and not_json.json()["code"]

"""Heartbeat utilisation (hostile input, bounded samples, booking totals) and the idle policy."""

from datetime import timedelta

import pytest
from django.core import mail
from rest_framework.test import APIClient

from labgpu.audit.models import AuditEvent
from labgpu.bookings.models import Booking, Notification
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.catalog.models import ProviderAccount
from labgpu.chat.models import ChatDelivery
from labgpu.chat.services import channel_create, delivery_attempt
from labgpu.chat.tests.receiver import receiver
from labgpu.core.timeutils import now
from labgpu.health.models import UtilisationSample
from labgpu.health.utilisation import bookings_reclaim_idle
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.factories import NodeFactory
from labgpu.provisioning.tokens import bootstrap_token_for, hash_secret
from labgpu.usage.models import BookingUtilisation

pytestmark = pytest.mark.django_db


class Clock:
    def __init__(self, monkeypatch):
        self.at = now()
        for where in ("labgpu.health.utilisation.now", "labgpu.health.services.now"):
            monkeypatch.setattr(where, lambda: self.at)

    def advance(self, **kwargs):
        self.at += timedelta(**kwargs)


@pytest.fixture
def clock(monkeypatch, settings):
    settings.LABGPU_HEARTBEAT_INTERVAL_S = 30
    settings.LABGPU_UTILISATION_SAMPLE_MIN_S = 10
    return Clock(monkeypatch)


@pytest.fixture
def ready(alice, vision_lab, pool):
    """A ready booking whose agent holds a heartbeat token; returns (booking, agent client)."""
    start = now() - timedelta(minutes=30)
    booking = BookingFactory(
        lab=vision_lab,
        user=alice,
        pool=pool,
        start=start,
        end=start + timedelta(hours=4),
        status="provisioning",
    )
    node = NodeFactory(
        booking=booking,
        provider_account=ProviderAccount.objects.first(),
        provider_id="7",
        public_ip="192.0.2.7",
    )
    Node.objects.filter(pk=node.pk).update(
        bootstrap_token_hash=hash_secret(bootstrap_token_for(node.pk))
    )
    boot = APIClient()
    boot.credentials(HTTP_AUTHORIZATION=f"Bearer {bootstrap_token_for(node.pk)}")
    token = boot.post("/api/v1/agent/bootstrap/").json()["heartbeat_token"]
    Node.objects.filter(pk=node.pk).update(status="ready", passed_at=now())
    Booking.objects.filter(pk=booking.pk).update(status="ready")
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return booking, agent


def usage(util=50.0, ssh=1, procs=1, gpus=1):
    return {
        "status": "alive",
        "usage": {
            "gpus": [
                {
                    "index": i,
                    "utilisation_pct": util,
                    "vram_used_mib": 1000.0,
                    "vram_total_mib": 196_592.0,
                    "power_w": 300.0,
                }
                for i in range(gpus)
            ],
            "gpu_processes": procs,
            "ssh_sessions": ssh,
        },
    }


IDLE = {"util": 0.0, "ssh": 0, "procs": 0}


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ([1, 2], "heartbeat"),
        ({"usage": "busy"}, "usage"),
        ({"usage": {"gpus": {"0": 1}}}, "usage/gpus"),
        ({"usage": {"gpus": [{"index": i} for i in range(65)]}}, "usage/gpus"),
        ({"usage": {"gpus": [{"index": -1}]}}, "usage/gpus/0/index"),
        ({"usage": {"gpus": [{"index": True}]}}, "usage/gpus/0/index"),
        ({"usage": {"gpus": [{"index": 0}, {"index": 0}]}}, "usage/gpus/1/index"),
        (
            {"usage": {"gpus": [{"index": 0, "utilisation_pct": 101}]}},
            "usage/gpus/0/utilisation_pct",
        ),
        ({"usage": {"gpus": [{"index": 0, "power_w": "300"}]}}, "usage/gpus/0/power_w"),
        ({"usage": {"gpus": [{"index": 0, "vram_used_mib": 1e300}]}}, "usage/gpus/0/vram_used_mib"),
        ({"usage": {"gpus": [], "ssh_sessions": -1}}, "usage/ssh_sessions"),
        ({"usage": {"gpus": [], "gpu_processes": 2.5}}, "usage/gpu_processes"),
        ({"status": "x" * 100}, "status"),
    ],
)
def test_hostile_heartbeat_is_refused_with_the_field_never_a_500(ready, body, path):
    _, agent = ready
    response = agent.post("/api/v1/agent/heartbeat/", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid_heartbeat"
    assert path in response.json()["extra"]["fields"]
    assert not UtilisationSample.objects.exists()


def test_heartbeat_larger_than_16_kib_is_refused(ready):
    _, agent = ready
    body = {"status": "alive", "pad": "x" * 17_000}
    assert agent.post("/api/v1/agent/heartbeat/", body, format="json").status_code == 400


def test_a_heartbeat_without_usage_still_works(ready):
    _, agent = ready
    assert agent.post("/api/v1/agent/heartbeat/").json() == {"action": "continue"}
    assert agent.post("/api/v1/agent/heartbeat/", {"status": "alive"}, format="json").json() == {
        "action": "continue"
    }


def test_samples_are_rate_bounded_and_totals_count_used_hours(ready, clock):
    booking, agent = ready
    for _ in range(5):  # a hostile agent heartbeating every second gets one sample per 10 s
        assert agent.post("/api/v1/agent/heartbeat/", usage(80.0), format="json").status_code == 200
        clock.advance(seconds=1)
    assert UtilisationSample.objects.filter(booking=booking).count() == 1
    clock.advance(seconds=25)  # 30 s since the first
    agent.post("/api/v1/agent/heartbeat/", usage(**IDLE), format="json")
    clock.advance(seconds=30)
    agent.post("/api/v1/agent/heartbeat/", usage(**IDLE), format="json")
    clock.advance(seconds=3600)  # the agent fell silent for an hour: that hour is not observed
    agent.post("/api/v1/agent/heartbeat/", usage(**IDLE), format="json")
    totals = BookingUtilisation.objects.get(booking=booking)
    # Each interval takes the state its closing heartbeat saw: 4 × 1 s busy at 80 %, then 26 s
    # and 30 s idle, then the silent hour capped to 3 heartbeat intervals (90 s) idle.
    assert totals.active_s == pytest.approx(4)
    assert totals.observed_s == pytest.approx(4 + 26 + 30 + 90)
    assert totals.average_utilisation_pct == pytest.approx(80 * 4 / 150, abs=0.1)
    assert UtilisationSample.objects.filter(booking=booking).count() == 4


def test_samples_older_than_the_retention_are_pruned(ready, clock, settings):
    settings.LABGPU_UTILISATION_RETENTION_S = 60
    booking, agent = ready
    for _ in range(10):
        agent.post("/api/v1/agent/heartbeat/", usage(), format="json")
        clock.advance(seconds=20)
    assert UtilisationSample.objects.filter(booking=booking).count() <= 4


def enable_policy(booking, idle=30, grace=15):
    booking.pool.idle_reclaim_minutes = idle
    booking.pool.idle_grace_minutes = grace
    booking.pool.save(update_fields=["idle_reclaim_minutes", "idle_grace_minutes"])


def beat_for(agent, clock, minutes, **kw):
    for _ in range(minutes * 2):
        agent.post("/api/v1/agent/heartbeat/", usage(**kw), format="json")
        clock.advance(seconds=30)


def test_idle_policy_is_off_by_default(ready, clock):
    booking, agent = ready
    beat_for(agent, clock, 120, **IDLE)
    assert bookings_reclaim_idle() == {"warned": 0, "ended": 0}
    booking.refresh_from_db()
    assert booking.status == "ready"


@pytest.fixture
def sink(settings):
    """A local chat receiver (labgpu.chat's own), reachable because loopback is allowed here."""
    settings.LABGPU_CHAT_ALLOW_LOOPBACK = True
    with receiver() as state:
        yield state


def test_idle_booking_is_warned_then_ended_early_with_the_reason_and_audited(
    ready, clock, django_capture_on_commit_callbacks, sink
):
    booking, agent = ready
    enable_policy(booking)
    channel = channel_create(
        actor=booking.user,
        kind="webhook",
        name="mine",
        url=f"{sink.base_url}/in",
        secret="SECtest-signing-secret-0123456789",
        events=["idle_warning"],
    )
    beat_for(agent, clock, 29, **IDLE)
    assert bookings_reclaim_idle() == {"warned": 0, "ended": 0}
    beat_for(agent, clock, 2, **IDLE)
    with django_capture_on_commit_callbacks(execute=True):
        assert bookings_reclaim_idle() == {"warned": 1, "ended": 0}
        assert bookings_reclaim_idle() == {"warned": 0, "ended": 0}  # warned once
    assert Notification.objects.filter(user=booking.user, subject__contains="idle").count() == 1
    assert any("idle" in m.subject for m in mail.outbox)
    (delivery,) = ChatDelivery.objects.filter(channel=channel, event="idle_warning")
    assert delivery_attempt(delivery_id=delivery.pk) is None
    assert len(sink.requests) == 1 and "idle" in sink.requests[0].body.decode().lower()
    beat_for(agent, clock, 16, **IDLE)
    with django_capture_on_commit_callbacks(execute=True):
        assert bookings_reclaim_idle() == {"warned": 0, "ended": 1}
        assert bookings_reclaim_idle() == {"warned": 0, "ended": 0}
    booking.refresh_from_db()
    assert booking.status == "ending" and booking.ended_at is not None
    assert "idle" in booking.end_reason
    assert (
        AuditEvent.objects.filter(action="booking.idle_reclaim", target_id=str(booking.pk)).count()
        == 1
    )


def test_use_after_the_warning_lifts_it_and_the_booking_stays(ready, clock):
    booking, agent = ready
    enable_policy(booking)
    beat_for(agent, clock, 31, **IDLE)
    assert bookings_reclaim_idle()["warned"] == 1
    beat_for(agent, clock, 1, util=0.0, ssh=1, procs=0)  # someone logged in
    beat_for(agent, clock, 20, **IDLE)
    assert bookings_reclaim_idle() == {"warned": 0, "ended": 0}
    booking.refresh_from_db()
    assert booking.status == "ready"


def test_keep_lifts_the_warning_and_restarts_the_idle_clock(ready, clock, alice, mallory):
    booking, agent = ready
    enable_policy(booking)
    beat_for(agent, clock, 31, **IDLE)
    assert bookings_reclaim_idle()["warned"] == 1
    other = APIClient()
    other.force_authenticate(mallory)
    assert other.post(f"/api/v1/bookings/{booking.pk}/keep/").status_code in (403, 404)
    owner = APIClient()
    owner.force_authenticate(alice)
    response = owner.post(f"/api/v1/bookings/{booking.pk}/keep/")
    assert response.status_code == 200, response.content
    assert response.json()["idle_warned_at"] is None
    beat_for(agent, clock, 20, **IDLE)
    assert bookings_reclaim_idle() == {"warned": 0, "ended": 0}
    booking.refresh_from_db()
    assert booking.status == "ready"
    assert AuditEvent.objects.filter(action="booking.idle_keep").count() == 1


def test_a_silent_agent_is_not_idle(ready, clock):
    booking, agent = ready
    enable_policy(booking)
    beat_for(agent, clock, 1, **IDLE)
    clock.advance(hours=2)
    assert bookings_reclaim_idle() == {"warned": 0, "ended": 0}


def test_owner_sees_live_utilisation_and_other_labs_do_not(ready, clock, alice, mallory):
    booking, agent = ready
    beat_for(agent, clock, 2, util=60.0)
    owner = APIClient()
    owner.force_authenticate(alice)
    data = owner.get(f"/api/v1/bookings/{booking.pk}/utilisation/").json()
    assert len(data["samples"]) == 4
    assert data["samples"][0]["utilisation_pct"] == 60.0
    assert data["average_utilisation_pct"] == pytest.approx(60.0)
    assert data["idle_policy"] is None
    other = APIClient()
    other.force_authenticate(mallory)
    assert other.get(f"/api/v1/bookings/{booking.pk}/utilisation/").status_code == 404


# --- keep, hostile ------------------------------------------------------------------------------


def _keep_state(booking) -> tuple:
    """What a keep would write: the booking's totals and the audit of keeps."""
    totals = BookingUtilisation.objects.filter(booking=booking).values().first()
    return totals, AuditEvent.objects.filter(action="booking.idle_keep").count()


@pytest.fixture
def warned(ready, clock):
    booking, agent = ready
    enable_policy(booking)
    beat_for(agent, clock, 31, **IDLE)
    assert bookings_reclaim_idle()["warned"] == 1
    return booking


def test_keep_on_someone_elses_booking_is_refused_and_writes_nothing(warned, mallory, vision_lab):
    from labgpu.accounts.tests.factories import MembershipFactory, UserFactory

    labmate = UserFactory(username="ivan")
    MembershipFactory(user=labmate, lab=vision_lab)
    before = _keep_state(warned)
    for person, status, code in ((mallory, 404, "not_found"), (labmate, 403, "not_your_booking")):
        client = APIClient()
        client.force_authenticate(person)
        response = client.post(f"/api/v1/bookings/{warned.pk}/keep/")
        assert response.status_code == status, response.content
        assert response.json()["code"] == code
    assert _keep_state(warned) == before


def test_keep_without_a_warning_or_twice_is_a_409_and_writes_nothing(ready, clock, alice):
    booking, agent = ready
    enable_policy(booking)
    beat_for(agent, clock, 5)  # busy: no warning
    owner = APIClient()
    owner.force_authenticate(alice)
    before = _keep_state(booking)
    response = owner.post(f"/api/v1/bookings/{booking.pk}/keep/")
    assert response.status_code == 409, response.content
    assert response.json()["code"] == "not_idle_warned"
    assert _keep_state(booking) == before

    beat_for(agent, clock, 31, **IDLE)
    assert bookings_reclaim_idle()["warned"] == 1
    assert owner.post(f"/api/v1/bookings/{booking.pk}/keep/").status_code == 200
    kept = _keep_state(booking)
    again = owner.post(f"/api/v1/bookings/{booking.pk}/keep/")
    assert again.status_code == 409 and again.json()["code"] == "not_idle_warned"
    assert _keep_state(booking) == kept
    assert kept[1] == 1


def test_keep_with_a_wrong_method_or_a_body_is_a_json_4xx_and_writes_nothing(warned, alice):
    owner = APIClient()
    owner.force_authenticate(alice)
    url = f"/api/v1/bookings/{warned.pk}/keep/"
    before = _keep_state(warned)
    for method in ("get", "put", "patch", "delete"):
        response = getattr(owner, method)(url)
        assert response.status_code == 405, (method, response.content)
        assert response.json()["code"]
    bodies = [
        owner.post(url, {"keep": True, "until": "forever"}, format="json"),
        owner.post(url, "[1, 2", content_type="application/json"),
        owner.post(url, '"yes"', content_type="application/json"),
        owner.post(url, "keep=1", content_type="text/plain"),
    ]
    for response in bodies:
        assert 400 <= response.status_code < 500, response.content
        assert response["Content-Type"].startswith("application/json")
        assert response.json()["code"]
    assert _keep_state(warned) == before
    assert owner.post(url).status_code == 200  # the same booking, asked plainly: kept

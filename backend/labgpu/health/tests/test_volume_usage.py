"""`/data` used space in the heartbeat (hostile input, I-9) and the `volume_near_full` warning."""

from decimal import Decimal

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conftest import client_for
from labgpu.bookings.models import Notification
from labgpu.chat.models import ChatDelivery
from labgpu.chat.services import channel_create, delivery_attempt
from labgpu.chat.tests.receiver import receiver
from labgpu.health.limits import MAX_DATA_BYTES
from labgpu.health.tests import test_utilisation as heartbeats
from labgpu.provisioning.models import Volume

pytestmark = pytest.mark.django_db

ready = heartbeats.ready  # a ready node whose agent holds its heartbeat token
usage = heartbeats.usage
GIB = 2**30
SECRET = "SECtest-signing-secret-0123456789"


@pytest.fixture
def volume(ready):
    """Alice's 100 GB volume, attached to the ready node."""
    booking, _ = ready
    node = booking.nodes.get()
    return Volume.objects.create(
        owner_user=booking.user,
        provider_account=node.provider_account,
        region=node.region,
        name="labgpu-u1-tor1",
        size_gb=100,
        provider_id="vol-1",
        state="attached",
        attached_node=node,
        last_attached_node=node,
    )


@pytest.fixture
def sink(settings):
    settings.LABGPU_CHAT_ALLOW_LOOPBACK = True
    with receiver() as state:
        yield state


def beat(agent, used_gb: float, total_gb: float = 100):
    body = usage()
    body["usage"]["data"] = {"used_bytes": int(used_gb * GIB), "total_bytes": int(total_gb * GIB)}
    response = agent.post("/api/v1/agent/heartbeat/", body, format="json")
    assert response.status_code == 200, response.content
    return response


def test_used_space_is_stored_with_when_and_shown_in_the_volume_list(ready, volume):
    booking, agent = ready
    beat(agent, used_gb=12.5)

    volume.refresh_from_db()
    assert volume.used_gb == Decimal("12.50") and volume.used_at is not None
    (shown,) = client_for(booking.user).get("/api/v1/volumes/").json()
    assert shown["used_gb"] == "12.50" and shown["used_at"] is not None


def test_used_space_is_never_stored_above_the_volume_size(ready, volume):
    _, agent = ready
    # root on the node can make a filesystem claim any total; the volume is 100 GB
    beat(agent, used_gb=900, total_gb=1000)
    volume.refresh_from_db()
    assert volume.used_gb == Decimal("100.00")


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ("full", "usage/data"),
        ([1, 2], "usage/data"),
        ({"total_bytes": 10}, "usage/data/used_bytes"),
        ({"used_bytes": 10}, "usage/data/total_bytes"),
        ({"used_bytes": -1, "total_bytes": 10}, "usage/data/used_bytes"),
        ({"used_bytes": "5", "total_bytes": 10}, "usage/data/used_bytes"),
        ({"used_bytes": 5.5, "total_bytes": 10}, "usage/data/used_bytes"),
        ({"used_bytes": True, "total_bytes": 10}, "usage/data/used_bytes"),
        ({"used_bytes": None, "total_bytes": 10}, "usage/data/used_bytes"),
        ({"used_bytes": 1, "total_bytes": MAX_DATA_BYTES + 1}, "usage/data/total_bytes"),
        ({"used_bytes": 10**40, "total_bytes": 10**41}, "usage/data/used_bytes"),
        ({"used_bytes": 1, "total_bytes": 1e300}, "usage/data/total_bytes"),
        ({"used_bytes": 0, "total_bytes": 0}, "usage/data/total_bytes"),
        ({"used_bytes": 11, "total_bytes": 10}, "usage/data/used_bytes"),
    ],
)
def test_hostile_data_usage_is_refused_with_the_field_and_nothing_stored(ready, volume, data, path):
    _, agent = ready
    body = usage()
    body["usage"]["data"] = data
    response = agent.post("/api/v1/agent/heartbeat/", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid_heartbeat"
    assert path in response.json()["extra"]["fields"]
    volume.refresh_from_db()
    assert volume.used_gb is None and volume.used_at is None


def test_a_heartbeat_without_data_leaves_used_unknown(ready, volume):
    _, agent = ready
    assert agent.post("/api/v1/agent/heartbeat/", usage(), format="json").status_code == 200
    volume.refresh_from_db()
    assert volume.used_gb is None


def test_a_node_without_a_volume_ignores_the_numbers(ready):
    _, agent = ready
    beat(agent, used_gb=99)
    assert not Volume.objects.exists()


def test_near_full_warns_the_owner_once_per_crossing_and_rearms_below(
    ready, volume, sink, settings, django_capture_on_commit_callbacks
):
    settings.LABGPU_VOLUME_NEAR_FULL_PCT = 90
    booking, agent = ready
    channel = channel_create(
        actor=booking.user,
        kind="webhook",
        name="mine",
        url=f"{sink.base_url}/in",
        secret=SECRET,
        events=["volume_near_full"],
    )

    def warnings() -> int:
        return Notification.objects.filter(user=booking.user, subject__contains="u1-tor1").count()

    with django_capture_on_commit_callbacks(execute=True):
        beat(agent, used_gb=89)
        assert warnings() == 0
        beat(agent, used_gb=91)
        beat(agent, used_gb=95)  # still over: no second warning
        beat(agent, used_gb=88)  # under, but within the re-arm margin
        beat(agent, used_gb=92)
    assert warnings() == 1
    assert any("labgpu-u1-tor1" in m.subject and "91%" in m.subject for m in mail.outbox)
    (delivery,) = ChatDelivery.objects.filter(channel=channel, event="volume_near_full")
    assert delivery_attempt(delivery_id=delivery.pk) is None
    assert len(sink.requests) == 1
    assert "labgpu-u1-tor1" in sink.requests[0].body.decode()

    with django_capture_on_commit_callbacks(execute=True):
        beat(agent, used_gb=40)  # re-armed
        beat(agent, used_gb=93)  # a new crossing
    assert warnings() == 2
    assert ChatDelivery.objects.filter(channel=channel, event="volume_near_full").count() == 2


def test_a_labs_volume_warns_its_admins_and_the_user_whose_node_filled_it(
    ready, volume, bob, mallory, settings
):
    settings.LABGPU_VOLUME_NEAR_FULL_PCT = 90
    settings.LABGPU_CHAT_ALLOW_LOOPBACK = True
    booking, agent = ready
    Volume.objects.filter(pk=volume.pk).update(owner_user=None, owner_lab=booking.lab)
    url = "http://127.0.0.1:9/in"
    channels = {
        "lab": channel_create(
            actor=bob, kind="webhook", name="lab", url=url, secret=SECRET, lab=booking.lab
        ),
        "bob": channel_create(actor=bob, kind="webhook", name="bob", url=url, secret=SECRET),
        "alice": channel_create(
            actor=booking.user, kind="webhook", name="alice", url=url, secret=SECRET
        ),
        "mallory": channel_create(
            actor=mallory, kind="webhook", name="mallory", url=url, secret=SECRET
        ),
    }
    beat(agent, used_gb=97)
    posted = set(
        ChatDelivery.objects.filter(event="volume_near_full").values_list("channel_id", flat=True)
    )
    assert posted == {channels[name].pk for name in ("lab", "bob", "alice")}
    warned = set(
        Notification.objects.filter(subject__contains="u1-tor1").values_list(
            "user__username", flat=True
        )
    )
    assert warned == {booking.user.username, bob.username}


def test_used_space_costs_a_steady_heartbeat_one_select_and_one_update(ready, volume, settings):
    settings.LABGPU_UTILISATION_SAMPLE_MIN_S = 3600  # no chart sample in either heartbeat
    _, agent = ready
    beat(agent, used_gb=10)  # warm: the first heartbeat may start clocks and samples
    with CaptureQueriesContext(connection) as plain:
        assert agent.post("/api/v1/agent/heartbeat/", usage(), format="json").status_code == 200
    with CaptureQueriesContext(connection) as with_data:
        beat(agent, used_gb=11)
    added = [q["sql"] for q in with_data.captured_queries[len(plain.captured_queries) :]]
    assert len(with_data.captured_queries) - len(plain.captured_queries) == 2, added

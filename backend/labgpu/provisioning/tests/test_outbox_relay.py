"""The outbox relays (issue 29, item 5).

With the beat's sweeps running, a booking the broker missed would start anyway at the next
`start_due_bookings`, so the broker-outage test cannot tell the outbox's work from theirs. Here
nothing sweeps: the beat's every sweep (and its own relay) is scaled to over an hour away, only the
provider poll keeps its interval, and the only path from the request to the provider is the outbox
row the request wrote and one relay run, sent as the beat's `relay-outbox` entry would send it.
"""

import httpx
import pytest

from labgpu.accounts.services import token_create
from labgpu.bookings.models import Booking
from labgpu.core.models import OutboxMessage
from labgpu.core.outbox import publish_best_effort, relay_after
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.conftest import on_demand_body
from labgpu.provisioning.tests.harness import wait_for
from labgpu.provisioning.tests.ledger import assert_ledger_exact
from labgpu.provisioning.tests.test_lifecycle import assert_no_orphans, end_early, wait_status

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Every `every(…)` entry of CELERY_BEAT_SCHEDULE at least 5 s × this: none comes due in the test
# (a new beat entry first runs one interval after the beat starts).
SWEEPS_OFF = {"LABGPU_BEAT_SCALE": "1000"}


def test_a_booking_made_while_the_broker_is_down_starts_through_the_outbox_alone(
    lifecycle, live_server, alice
):
    _, raw = token_create(user=alice, name="outbox", scopes=["read", "book"])
    api = httpx.Client(
        base_url=live_server.url, headers={"Authorization": f"Bearer {raw}"}, timeout=30
    )
    lifecycle.redis.stop()
    try:
        made = api.post("/api/v1/bookings/", json=on_demand_body(lifecycle.pool, 30))
    finally:
        lifecycle.redis.start()
    assert made.status_code == 201, made.text
    booking_id = made.json()["id"]

    # The request answered; its start waits in the outbox, nothing else happened.
    (row,) = OutboxMessage.objects.all()
    assert (row.task, row.args) == ("labgpu.provisioning.tasks.start_booking", [booking_id])
    assert Booking.objects.get(pk=booking_id).status == "scheduled"
    assert not Node.objects.exists() and lifecycle.emulator.ledger() == []

    # The broker is back; a worker runs whatever reaches the queue, its beat only the poll.
    lifecycle.start_worker(**SWEEPS_OFF)
    wait_for(
        lambda: now() - OutboxMessage.objects.get(pk=row.pk).created_at > relay_after(),
        message="the row to be the relay's (older than LABGPU_OUTBOX_RELAY_AFTER_S)",
    )
    assert OutboxMessage.objects.filter(pk=row.pk).exists()  # nobody published it meanwhile
    assert Booking.objects.get(pk=booking_id).status == "scheduled"
    # What the beat's relay-outbox entry sends, and nothing else of the schedule; sent again
    # until the broker takes it, as the beat would (this process's breaker skips it for
    # LABGPU_REDIS_BREAKER_S after the failure above).
    wait_for(
        lambda: publish_best_effort("labgpu.core.tasks.relay_outbox"),
        message="the broker to take the relay",
    )

    wait_for(lambda: not OutboxMessage.objects.exists(), message="the relay to publish the row")
    booking = wait_status(lifecycle, booking_id, "ready", timeout_s=120)
    node = Node.objects.get(booking=booking)
    (created,) = lifecycle.emulator.ledger()
    assert created["name"] == node.name and str(created["id"]) == node.provider_id

    end_early(alice, booking_id)  # its teardown goes through the outbox too, broker up
    wait_status(lifecycle, booking_id, "completed")
    assert_no_orphans(lifecycle)
    assert_ledger_exact(lifecycle.emulator)

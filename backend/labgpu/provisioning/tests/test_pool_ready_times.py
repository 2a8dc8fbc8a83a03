"""How long a pool's nodes take to come up, as the booking form shows it beside "Start now"."""

from datetime import timedelta

import pytest

from conftest import client_for
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.catalog.tests.factories import NodePoolFactory
from labgpu.core.timeutils import now
from labgpu.provisioning.models import Node
from labgpu.provisioning.selectors import READY_TIME_SAMPLES
from labgpu.provisioning.tests.factories import NodeFactory

pytestmark = pytest.mark.django_db


def ready_node(pool, *, seconds: float, ago: timedelta) -> Node:
    # A finished booking holds no slot, so any number of them may share a pool.
    node = NodeFactory(booking=BookingFactory(pool=pool, status="completed"))
    ready_at = now() - ago
    Node.objects.filter(pk=node.pk).update(
        created_at=ready_at - timedelta(seconds=seconds), ready_at=ready_at
    )
    return node


def test_pool_ready_times_are_the_median_and_slowest_of_the_latest_ready_nodes(alice, pool):
    # Older, slower nodes fall out of the window of the latest READY_TIME_SAMPLES.
    for i in range(5):
        ready_node(pool, seconds=900, ago=timedelta(days=30, minutes=i))
    for i in range(READY_TIME_SAMPLES):
        ready_node(pool, seconds=30 + i, ago=timedelta(minutes=i))
    NodeFactory(booking=BookingFactory(pool=pool, status="provisioning"))  # still booting

    answer = client_for(alice).get("/api/v1/pool-ready-times/")

    assert answer.status_code == 200
    latest = [30 + i for i in range(READY_TIME_SAMPLES)]
    assert answer.json() == [
        {
            "pool": pool.pk,
            "median_seconds": round(sorted(latest)[9] / 2 + sorted(latest)[10] / 2),
            "max_seconds": max(latest),
            "samples": READY_TIME_SAMPLES,
        }
    ]


def test_pool_ready_times_name_only_pools_the_member_may_book(alice, mallory, pool, other_lab):
    closed = NodePoolFactory(name="closed", slug="closed")
    closed.allowed_labs.add(other_lab)
    ready_node(pool, seconds=40, ago=timedelta(minutes=1))
    ready_node(closed, seconds=50, ago=timedelta(minutes=1))

    mine = client_for(alice).get("/api/v1/pool-ready-times/").json()
    theirs = client_for(mallory).get("/api/v1/pool-ready-times/").json()

    assert [t["pool"] for t in mine] == [pool.pk]
    assert sorted(t["pool"] for t in theirs) == sorted([pool.pk, closed.pk])

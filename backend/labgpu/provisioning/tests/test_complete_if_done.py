"""`booking_complete_if_done` runs after each node's teardown and in every sweep; most calls find
nodes still there. Those are answered without the pool's lock, which every create, cancel and
extension of the pool queues behind."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from labgpu.bookings.models import Booking
from labgpu.catalog.models import NodePool
from labgpu.provisioning.models import Node
from labgpu.provisioning.services.nodes import booking_complete_if_done
from labgpu.provisioning.tests.factories import NodeFactory

pytestmark = pytest.mark.django_db


def _locks_taken(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if "FOR UPDATE" in q["sql"].upper()]


def test_a_booking_with_nodes_left_is_answered_without_the_pools_lock():
    node = NodeFactory(booking__status=Booking.Status.ENDING, status=Node.Status.DESTROYING)
    with CaptureQueriesContext(connection) as queries:
        booking_complete_if_done(booking_id=node.booking_id)
    assert _locks_taken(queries) == []
    node.booking.refresh_from_db()
    assert node.booking.status == Booking.Status.ENDING


def test_the_last_node_gone_completes_the_booking_under_the_pools_lock():
    node = NodeFactory(booking__status=Booking.Status.ENDING, status=Node.Status.DESTROYED)
    with CaptureQueriesContext(connection) as queries:
        booking_complete_if_done(booking_id=node.booking_id)
    pool_table = NodePool._meta.db_table
    assert any(pool_table in sql for sql in _locks_taken(queries)), queries.captured_queries
    node.booking.refresh_from_db()
    assert node.booking.status == Booking.Status.COMPLETED

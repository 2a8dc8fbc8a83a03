"""The per-request connection health check (labgpu/core/postgres/base.py): free when the
connection is quiet, and still replacing a connection the server has ended."""

import psycopg
import pytest
from django.db import connection, connections

pytestmark = pytest.mark.django_db(transaction=True)


def _new_request() -> None:
    """What Django does when a request starts (request_started → close_old_connections)."""
    connection.close_if_unusable_or_obsolete()


def test_a_quiet_connection_is_checked_without_a_statement(monkeypatch):
    connection.ensure_connection()
    checks = []
    wrapper = type(connections["default"])
    monkeypatch.setattr(wrapper, "is_usable", lambda self: checks.append(1) or True)
    _new_request()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 2")
    assert checks == []
    assert connection.health_check_done


def test_a_connection_the_server_ended_is_replaced_before_the_request_uses_it():
    connection.ensure_connection()
    ended = connection.connection.info.backend_pid
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as admin:
        # With a timeout, pg_terminate_backend waits until the backend has gone.
        assert admin.execute("SELECT pg_terminate_backend(%s, 5000)", [ended]).fetchone() == (True,)
    _new_request()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (now_serving,) = cursor.fetchone()
    assert now_serving != ended

"""Django's PostgreSQL backend, its per-request health check made free for a quiet connection.

With CONN_HEALTH_CHECKS Django checks a persistent connection before its first use in each request
by sending `SELECT 1` (`is_usable`): a round trip, and a statement for PostgreSQL to run, on every
request. When the server ends a connection (a restart, `pg_terminate_backend`, an idle timeout) it
writes an error and closes the socket, so the socket has something to read; an idle connection in
good order has nothing to read. So the check looks first, without a round trip: libpq reports the
connection good and idle, and a zero-timeout poll of its socket finds nothing waiting. Anything
else (data or EOF waiting, a broken or busy connection) gets Django's own check, which closes the
connection when `SELECT 1` fails. Only a peer that vanished without a word (its host powered off)
goes unseen until the request's first statement fails, as it could also fail right after a
`SELECT 1` that passed.

`prepared_cursor()`: a cursor that binds its parameters on the server and prepares each statement
on its first use in the connection, for the few fixed statements every booking create runs
(labgpu.core.rows): PostgreSQL then parses and plans each once per connection instead of once per
request. Django's own cursors stay as they are (client-side binding, never prepared).
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import pq


class PreparedCursor(base.ServerBindingCursor):
    def execute(self, query, params=None, *, prepare=None, binary=None):  # type: ignore[no-untyped-def]
        return super().execute(query, params, prepare=True, binary=binary)


class DatabaseWrapper(base.DatabaseWrapper):
    def prepared_cursor(self):  # type: ignore[no-untyped-def]
        """`cursor()`, but its statements are prepared (see the module's docstring)."""
        self.close_if_health_check_failed()
        self.ensure_connection()
        with self.wrap_database_errors:
            return self._prepare_cursor(PreparedCursor(self.connection))

    def close_if_health_check_failed(self) -> None:
        if (
            self.connection is not None
            and self.health_check_enabled
            and not self.health_check_done
            and not self.pool
            and _quiet(self.connection)
        ):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()


def _quiet(connection: base.Database.Connection) -> bool:
    """Connected, idle outside a transaction, and nothing from the server waiting to be read."""
    pgconn = connection.pgconn
    if pgconn.status != pq.ConnStatus.OK:
        return False
    if pgconn.transaction_status != pq.TransactionStatus.IDLE:
        return False
    try:
        readable, _, _ = select.select([pgconn.socket], [], [], 0)
    except (OSError, ValueError, base.Database.Error):
        return False
    return not readable

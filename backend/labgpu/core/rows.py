"""Hot-path reads written out once: model instances from one fixed SQL statement.

A booking create and every API call run a few lookups (the token with its user, the member's labs,
the locked pool with its instance type) whose querysets cost more CPU to build and compile than
PostgreSQL spends running them. `JoinedRows` writes such a statement's column list once from the
models' metadata and turns each row back into ordinary model instances, with the conversions the
ORM itself applies to those columns, so the code that uses them cannot tell the difference.
With `prepared=True` the statement is also prepared once per connection (`prepared_cursor`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model


def prepared_cursor(using: str = DEFAULT_DB_ALIAS) -> Any:
    """A cursor whose statements PostgreSQL parses and plans once per connection, then reuses
    (labgpu.core.postgres); a backend without it gives its plain cursor. For fixed statements on a
    hot path only: parameters are bound on the server, so each needs a type PostgreSQL can infer
    (a bare `%s` in a select list may need a cast)."""
    connection = connections[using]
    return getattr(connection, "prepared_cursor", connection.cursor)()


class JoinedRows:
    """`SELECT <models' columns>, <extra> <tail>`: `models` pairs each model with its table alias in
    `tail`; each row comes back as (instance, …, extra value, …)."""

    def __init__(
        self,
        models: Sequence[tuple[type[Model], str]],
        tail: str,
        extra: Sequence[str] = (),
        *,
        prepared: bool = False,
    ) -> None:
        self.models = models
        self.tail = tail
        self.extra = extra
        self.prepared = prepared

    @cached_property
    def sql(self) -> str:
        columns = [
            f'{alias}."{field.column}"'
            for model, alias in self.models
            for field in model._meta.concrete_fields
        ]
        return f"SELECT {', '.join([*columns, *self.extra])} {self.tail}"

    @cached_property
    def _layout(self) -> list[tuple[type[Model], list[str], slice]]:
        layout, at = [], 0
        for model, _ in self.models:
            names = [field.attname for field in model._meta.concrete_fields]
            layout.append((model, names, slice(at, at + len(names))))
            at += len(names)
        return layout

    @cached_property
    def _converters(self) -> list[tuple[int, Any, Any]]:
        connection = connections[DEFAULT_DB_ALIAS]
        fields = [field for model, _ in self.models for field in model._meta.concrete_fields]
        return [
            (index, converter, field)
            for index, field in enumerate(fields)
            for converter in field.get_db_converters(connection)
        ]

    def fetch(self, params: Sequence[Any] | Mapping[str, Any]) -> list[tuple[Any, ...]]:
        connection = connections[DEFAULT_DB_ALIAS]
        with prepared_cursor() if self.prepared else connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            rows = cursor.fetchall()
        return [self._instances(list(row), connection) for row in rows]

    def _instances(self, row: list[Any], connection: Any) -> tuple[Any, ...]:
        for index, converter, field in self._converters:
            row[index] = converter(row[index], field, connection)
        instances = [
            model.from_db(DEFAULT_DB_ALIAS, names, row[columns])
            for model, names, columns in self._layout
        ]
        return (*instances, *row[self._layout[-1][2].stop :])

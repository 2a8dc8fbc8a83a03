"""Hot-path reads written out once: model instances from one fixed SQL statement.

A booking create and every API call run a few lookups (the token with its user, the member's labs,
the locked pool with its instance type) whose querysets cost more CPU to build and compile than
PostgreSQL spends running them. `JoinedRows` writes such a statement's column list once from the
models' metadata and turns each row back into ordinary model instances, with the conversions the
ORM itself applies to those columns, so the code that uses them cannot tell the difference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, signals


class JoinedRows:
    """`SELECT <models' columns>, <extra> <tail>`: `models` pairs each model with its table alias in
    `tail`; each row comes back as (instance, …, extra value, …)."""

    def __init__(
        self, models: Sequence[tuple[type[Model], str]], tail: str, extra: Sequence[str] = ()
    ) -> None:
        self.models = models
        self.tail = tail
        self.extra = extra

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
        with connection.cursor() as cursor:
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


class RowInsert:
    """`model.objects.create(**values)` for a hot path, its INSERT written once.

    Django compiles the INSERT of every `create` afresh (~0.5 ms of CPU for a booking's 25
    columns, more than PostgreSQL spends on the row). This writes the statement once from the
    model's metadata and per call does what `Model.save` does for a plain insert: each field's
    `pre_save` (auto_now…) and `get_db_prep_save`, then sets the returned id and the instance's
    state. A model with save signals, or a value that is an expression (a `db_default`, an F()),
    takes the ORM's own path, so the result never differs from `create`.
    """

    def __init__(self, model: type[Model]) -> None:
        self.model = model

    @cached_property
    def _fields(self) -> list[Any]:
        meta = self.model._meta
        return [
            f for f in meta.local_concrete_fields if f is not meta.auto_field and not f.generated
        ]

    @cached_property
    def sql(self) -> str:
        meta = self.model._meta
        assert [f.column for f in meta.db_returning_fields] == [meta.pk.column], meta.label
        columns = ", ".join(f'"{field.column}"' for field in self._fields)
        marks = ", ".join(["%s"] * len(self._fields))
        # Only the model's table and column names are formatted in; values are parameters.
        table, pk = meta.db_table, meta.pk.column
        return f'INSERT INTO "{table}" ({columns}) VALUES ({marks}) RETURNING "{pk}"'  # noqa: S608

    def create(self, **values: Any) -> Any:
        instance = self.model(**values)
        if signals.pre_save.has_listeners(self.model) or signals.post_save.has_listeners(
            self.model
        ):
            instance.save(force_insert=True)
            return instance
        instance._prepare_related_fields_for_save(operation_name="save")
        connection = connections[DEFAULT_DB_ALIAS]
        params = []
        for field in self._fields:
            value = field.pre_save(instance, add=True)
            if hasattr(value, "resolve_expression"):
                instance.save(force_insert=True)
                return instance
            params.append(field.get_db_prep_save(value, connection=connection))
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            (pk,) = cursor.fetchone()
        setattr(instance, self.model._meta.pk.attname, pk)
        instance._state.adding = False
        instance._state.db = DEFAULT_DB_ALIAS
        return instance

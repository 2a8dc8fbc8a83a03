"""Hot-path INSERTs written once (RowInsert): the booking create path's rows and its audit entry.

The bottom layer of labgpu (pyproject.toml, import-linter): the audit log, which every layer
writes to, uses it too.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, signals


class RowInsert:
    """`model.objects.create(**values)` for a hot path, its INSERT written once.

    Django compiles the INSERT of every `create` afresh (~0.5 ms of CPU for a booking's 25
    columns, more than PostgreSQL spends on the row). This writes the statement once from the
    model's metadata and per call does what `Model.save` does for a plain insert: each field's
    `pre_save` (auto_now…) and `get_db_prep_save`, then sets the returned id and the instance's
    state. A model with its own `save()` or save signals, or a value that is an expression (a
    `db_default`, an F()), takes the ORM's own path, so the result never differs from `create`.
    """

    def __init__(self, model: type[Model], *, prepared: bool = False) -> None:
        self.model = model
        self.prepared = prepared  # labgpu.core.rows.prepared_cursor

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
        if (
            self.model.save is not Model.save  # a model's own save() must run
            or signals.pre_save.has_listeners(self.model)
            or signals.post_save.has_listeners(self.model)
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
        # A backend without prepared statements (labgpu.core.postgres) gives its plain cursor.
        make = getattr(connection, "prepared_cursor", None) if self.prepared else None
        with make() if make else connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            (pk,) = cursor.fetchone()
        setattr(instance, self.model._meta.pk.attname, pk)
        instance._state.adding = False
        instance._state.db = DEFAULT_DB_ALIAS
        return instance

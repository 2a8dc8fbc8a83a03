"""Serializer building blocks shared by the apps' serializers.

CachedFieldsMixin builds a ModelSerializer's fields once per class instead of once per instance.
DRF's `ModelSerializer.get_fields` derives every field from the model (field_mapping, build_field,
the model's validators) each time a serializer is instantiated, nested ones included, which cost
more than writing the booking's row on the create path (docs/benchmarks.md "Booking storm"). The
result depends only on the class and its Meta, so the first instance keeps it as a template and
every instance gets a deep copy, exactly what DRF does with declared fields. Not for a serializer
whose `get_fields` or `build_*` methods depend on the instance, its context or the request.

The classes carry no docstring on purpose: drf-spectacular would show it as the description of
every schema component that has none of its own.
"""

from __future__ import annotations

import copy

from rest_framework import serializers


class CachedFieldsMixin:
    def get_fields(self) -> dict[str, serializers.Field]:
        cls = type(self)
        # The class's own __dict__, not an inherited attribute: a subclass builds its own.
        template = cls.__dict__.get("_fields_template")
        if template is None:
            template = super().get_fields()  # type: ignore[misc]
            cls._fields_template = template  # type: ignore[attr-defined]
        return copy.deepcopy(template)


class CachedFieldsModelSerializer(CachedFieldsMixin, serializers.ModelSerializer):
    pass

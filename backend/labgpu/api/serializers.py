"""Serializer building blocks shared by the apps' serializers.

CachedFieldsMixin builds a serializer's fields once per class instead of once per instance.
DRF's `ModelSerializer.get_fields` derives every field from the model (field_mapping, build_field,
the model's validators) each time a serializer is instantiated, nested ones included, which cost
more than writing the booking's row on the create path (docs/benchmarks.md "Booking storm"); and
every serializer, model or plain, deep-copies its declared fields per instance, which re-creates
each field from its arguments (a related field's queryset included). The result depends only on
the class and its Meta, so the first instance keeps it as a template and every instance gets a
copy: a leaf field (no child field, not a serializer) a shallow one, as binding it to its parent
only assigns attributes on the copy (`Field.bind`), never mutates what the template holds; a
nested serializer or a list/dict field with a child, DRF's deep copy. Not for a serializer whose
`get_fields` or `build_*` methods depend on the instance, its context or the request.

The classes carry no docstring on purpose: drf-spectacular would show it as the description of
every schema component that has none of its own.
"""

from __future__ import annotations

import copy

from rest_framework import serializers


def _copy_field(field: serializers.Field) -> serializers.Field:
    if (
        isinstance(field, serializers.BaseSerializer)
        or hasattr(field, "child")
        or hasattr(field, "child_relation")
    ):
        return copy.deepcopy(field)
    # copy.copy's protocol (__reduce_ex__, then _reconstruct) costs several times this.
    twin = object.__new__(type(field))
    twin.__dict__.update(field.__dict__)
    return twin


class CachedFieldsMixin:
    def get_fields(self) -> dict[str, serializers.Field]:
        cls = type(self)
        # The class's own __dict__, not an inherited attribute: a subclass builds its own.
        template = cls.__dict__.get("_fields_template")
        if template is None:
            template = super().get_fields()  # type: ignore[misc]
            cls._fields_template = template  # type: ignore[attr-defined]
        return {name: _copy_field(field) for name, field in template.items()}


class CachedFieldsSerializer(CachedFieldsMixin, serializers.Serializer):
    pass


class CachedFieldsModelSerializer(CachedFieldsMixin, serializers.ModelSerializer):
    pass

"""CachedFieldsMixin: the fields a serializer gets are DRF's own, built once per class."""

from rest_framework import serializers

from labgpu.api.serializers import CachedFieldsMixin
from labgpu.bookings.serializers import BookingCreateSerializer, BookingSerializer


class PlainBookingSerializer(serializers.ModelSerializer):
    """BookingSerializer's declaration without the cache, as DRF builds it."""

    class Meta(BookingSerializer.Meta):
        pass


for _name, _field in BookingSerializer._declared_fields.items():
    PlainBookingSerializer._declared_fields[_name] = _field


def test_cached_fields_equal_the_fields_drf_builds():
    cached = BookingSerializer().fields
    plain = PlainBookingSerializer().fields
    assert list(cached) == list(plain)
    for name in plain:
        assert repr(cached[name]) == repr(plain[name]), name


def test_each_instance_gets_its_own_bound_fields():
    first, second = BookingSerializer(), BookingSerializer()
    assert first.fields["status"] is not second.fields["status"]
    assert first.fields["status"].parent is first
    assert second.fields["lab"].parent is second
    assert first.fields["lab"].fields["name"] is not second.fields["lab"].fields["name"]


def test_model_fields_are_built_once_per_class(monkeypatch):
    assert BookingSerializer().fields  # the template exists
    calls = []
    original = serializers.ModelSerializer.build_field
    monkeypatch.setattr(
        serializers.ModelSerializer,
        "build_field",
        lambda self, *a, **kw: calls.append(a[0]) or original(self, *a, **kw),
    )
    assert "status" in BookingSerializer().fields
    assert calls == []
    assert issubclass(BookingSerializer, CachedFieldsMixin)


def test_plain_serializer_fields_are_copied_not_rebuilt(monkeypatch):
    """A declared field reaches each instance as a copy of the class's template, not re-created
    from its arguments (DRF's deep copy re-creates a related field's queryset every time)."""
    assert BookingCreateSerializer().fields  # the template exists
    calls = []
    original = serializers.Field.__deepcopy__
    monkeypatch.setattr(
        serializers.Field,
        "__deepcopy__",
        lambda self, memo: calls.append(self) or original(self, memo),
    )
    first, second = BookingCreateSerializer(), BookingCreateSerializer()
    assert list(first.fields) == list(BookingCreateSerializer._declared_fields)
    assert calls == []
    assert first.fields["lab"] is not second.fields["lab"]
    assert first.fields["lab"].parent is first and second.fields["lab"].parent is second
    assert first.fields["lab"].queryset is second.fields["lab"].queryset


def test_copied_fields_validate_as_declared():
    body = {"pool": 3, "end": "2027-01-01T10:00:00Z", "purpose": "x" * 501}
    first = BookingCreateSerializer(data=body)
    assert not first.is_valid()
    assert set(first.errors) == {"purpose"}
    second = BookingCreateSerializer(data={"pool": 3, "end": "2027-01-01T10:00:00"})
    assert not second.is_valid()
    assert second.errors["end"][0].code == "naive_datetime"

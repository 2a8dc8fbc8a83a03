"""Every FilterSet's numbers are bounded (issue 11 item 7; docs/security.md, "Input limits").

django-filter reads `?instance_type=` or `?capacity=` as a Decimal and hands it to the database:
`-1e400` or a 23-digit id overflowed the driver's integer (a 500). Here integer fields
and foreign keys of generated and explicit FilterSets filter through `IdFilter` (a whole number
within bigint, else a 400 naming the parameter).
"""

from django.db import models
from django_filters import FilterSet as BaseFilterSet
from django_filters.filterset import FILTER_FOR_DBFIELD_DEFAULTS
from django_filters.rest_framework import DjangoFilterBackend

from labgpu.api.fields import IdFilter

_INTEGERS = [
    models.AutoField,
    models.BigAutoField,
    models.SmallIntegerField,
    models.IntegerField,
    models.BigIntegerField,
    models.PositiveIntegerField,
    models.PositiveSmallIntegerField,
    models.PositiveBigIntegerField,
    models.ForeignKey,
    models.OneToOneField,
]


class FilterSet(BaseFilterSet):
    """Base of every LabGPU FilterSet (and of those `filterset_fields` generates)."""

    FILTER_DEFAULTS = {
        **FILTER_FOR_DBFIELD_DEFAULTS,
        **{field: {"filter_class": IdFilter} for field in _INTEGERS},
    }


class FilterBackend(DjangoFilterBackend):
    filterset_base = FilterSet

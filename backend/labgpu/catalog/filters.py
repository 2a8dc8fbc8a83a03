import django_filters

from labgpu.api.fields import UtcIsoDateTimeFilter
from labgpu.catalog.models import Blackout


class BlackoutFilter(django_filters.FilterSet):
    start_before = UtcIsoDateTimeFilter(field_name="start", lookup_expr="lt")
    end_after = UtcIsoDateTimeFilter(field_name="end", lookup_expr="gt")

    class Meta:
        model = Blackout
        fields = ["pool"]

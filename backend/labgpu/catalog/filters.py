from labgpu.api.fields import UtcIsoDateTimeFilter
from labgpu.api.filters import FilterSet
from labgpu.catalog.models import Blackout


class BlackoutFilter(FilterSet):
    start_before = UtcIsoDateTimeFilter(field_name="start", lookup_expr="lt")
    end_after = UtcIsoDateTimeFilter(field_name="end", lookup_expr="gt")

    class Meta:
        model = Blackout
        fields = ["pool"]

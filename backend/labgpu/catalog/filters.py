import django_filters

from labgpu.catalog.models import Blackout


class BlackoutFilter(django_filters.FilterSet):
    start_before = django_filters.IsoDateTimeFilter(field_name="start", lookup_expr="lt")
    end_after = django_filters.IsoDateTimeFilter(field_name="end", lookup_expr="gt")

    class Meta:
        model = Blackout
        fields = ["pool"]

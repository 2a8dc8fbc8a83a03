import django_filters

from labgpu.api.filters import FilterSet
from labgpu.quotas.models import Quota, QuotaRequest


class QuotaFilter(FilterSet):
    month = django_filters.DateFilter()

    class Meta:
        model = Quota
        fields = ["lab", "instance_type", "month"]


class QuotaRequestFilter(FilterSet):
    class Meta:
        model = QuotaRequest
        fields = ["lab", "instance_type", "status"]

import django_filters

from labgpu.quotas.models import Quota, QuotaRequest


class QuotaFilter(django_filters.FilterSet):
    month = django_filters.DateFilter()

    class Meta:
        model = Quota
        fields = ["lab", "instance_type", "month"]


class QuotaRequestFilter(django_filters.FilterSet):
    class Meta:
        model = QuotaRequest
        fields = ["lab", "instance_type", "status"]

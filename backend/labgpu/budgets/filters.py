from labgpu.api.filters import FilterSet
from labgpu.budgets.models import Budget, CostCentre


class CostCentreFilter(FilterSet):
    class Meta:
        model = CostCentre
        fields = ["lab", "is_active"]


class BudgetFilter(FilterSet):
    class Meta:
        model = Budget
        fields = ["lab", "cost_centre"]

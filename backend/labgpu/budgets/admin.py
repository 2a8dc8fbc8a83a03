from django.contrib import admin

from labgpu.budgets.models import Budget, CostCentre


@admin.register(CostCentre)
class CostCentreAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "lab", "is_active"]
    list_filter = ["lab", "is_active"]


@admin.register(Budget)
class BudgetAdmin(admin.ModelAdmin):
    list_display = ["lab", "cost_centre", "period", "amount", "currency", "enforcement"]
    list_filter = ["lab", "enforcement"]

from django.urls import path
from rest_framework.routers import SimpleRouter

from labgpu.budgets import apis

router = SimpleRouter()
router.register("budgets", apis.BudgetViewSet, basename="budget")
router.register("cost-centres", apis.CostCentreViewSet, basename="cost-centre")

urlpatterns = [
    path(
        "cost-centre-defaults/",
        apis.CostCentreDefaultView.as_view(),
        name="cost-centre-default",
    ),
    *router.urls,
]

from django.db.models import Prefetch, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labgpu.accounts.models import Membership
from labgpu.budgets import services
from labgpu.budgets.filters import BudgetFilter, CostCentreFilter
from labgpu.budgets.models import Budget, CostCentre
from labgpu.budgets.selectors import budget_current, budgets_visible_to, cost_centres_visible_to
from labgpu.budgets.serializers import (
    BudgetCreateSerializer,
    BudgetQuerySerializer,
    BudgetSerializer,
    BudgetUpdateSerializer,
    CostCentreCreateSerializer,
    CostCentreDefaultSerializer,
    CostCentreSerializer,
    CostCentreUpdateSerializer,
)
from labgpu.core.timeutils import now


class CostCentreViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """A lab's cost centres (grant or project codes): members read them, lab admins keep them."""

    queryset = CostCentre.objects.none()
    serializer_class = CostCentreSerializer
    filterset_class = CostCentreFilter
    http_method_names = ["get", "post", "patch", "head", "options"]

    def get_queryset(self) -> QuerySet[CostCentre]:
        return cost_centres_visible_to(self.request.user).prefetch_related(
            Prefetch(
                "membership_defaults",
                queryset=Membership.objects.only("id", "user_id", "default_cost_centre_id"),
                to_attr="default_memberships",
            )
        )

    @extend_schema(request=CostCentreCreateSerializer, responses={201: CostCentreSerializer})
    def create(self, request: Request) -> Response:
        """Add a cost centre to a lab (its lab admins; audited)."""
        body = CostCentreCreateSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        centre = services.cost_centre_create(actor=request.user, **body.validated_data)
        return Response(
            CostCentreSerializer(self.get_queryset().get(pk=centre.pk)).data,
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(request=CostCentreUpdateSerializer, responses=CostCentreSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        """Rename or retire a cost centre (its lab admins; audited)."""
        centre = self.get_object()
        body = CostCentreUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.cost_centre_update(actor=request.user, cost_centre=centre, **body.validated_data)
        return Response(CostCentreSerializer(self.get_queryset().get(pk=centre.pk)).data)


class CostCentreDefaultView(APIView):
    """Set the cost centre a member's bookings carry unless they name another (lab admins)."""

    @extend_schema(request=CostCentreDefaultSerializer, responses=CostCentreDefaultSerializer)
    def post(self, request: Request) -> Response:
        body = CostCentreDefaultSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        data = body.validated_data
        membership = services.cost_centre_default_set(
            actor=request.user, lab=data["lab"], user=data["user"], cost_centre=data["cost_centre"]
        )
        return Response(
            {
                "lab": membership.lab_id,
                "user": membership.user_id,
                "cost_centre": membership.default_cost_centre_id,
            }
        )


AT = OpenApiParameter(
    "at",
    type=OpenApiTypes.DATETIME,
    description="The budget period containing this moment (ISO 8601 with an offset; a "
    "booking's start), default now: what is consumed, forecast and committed in it.",
)


class BudgetViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Budgets of my labs with their current period's consumed, forecast and committed cost.
    Members read them; lab admins set them (audited)."""

    queryset = Budget.objects.none()
    serializer_class = BudgetSerializer
    filterset_class = BudgetFilter
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Budget]:
        return budgets_visible_to(self.request.user)

    def _moment(self):  # type: ignore[no-untyped-def]
        """`?at=`: the period containing that moment (a booking's start), else the current one."""
        if self.request.method != "GET":
            return now()
        query = BudgetQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return query.validated_data.get("at") or now()

    def get_serializer(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if args:
            instance, moment = args[0], self._moment()
            many = instance if not isinstance(instance, Budget) else [instance]
            for budget in many:
                if isinstance(budget, Budget):
                    budget.current = budget_current(budget, moment)  # type: ignore[attr-defined]
        return super().get_serializer(*args, **kwargs)

    @extend_schema(parameters=[AT])
    def list(self, request: Request, *args, **kwargs) -> Response:  # type: ignore[no-untyped-def]
        return super().list(request, *args, **kwargs)

    @extend_schema(parameters=[AT])
    def retrieve(self, request: Request, *args, **kwargs) -> Response:  # type: ignore[no-untyped-def]
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(request=BudgetCreateSerializer, responses={201: BudgetSerializer})
    def create(self, request: Request) -> Response:
        body = BudgetCreateSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        budget = services.budget_create(actor=request.user, **body.validated_data)
        return Response(self.get_serializer(budget).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=BudgetUpdateSerializer, responses=BudgetSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        budget = self.get_object()
        body = BudgetUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        budget = services.budget_update(actor=request.user, budget=budget, **body.validated_data)
        return Response(self.get_serializer(budget).data)

    def destroy(self, request: Request, pk: str) -> Response:
        services.budget_delete(actor=request.user, budget=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

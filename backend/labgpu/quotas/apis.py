from collections.abc import Callable

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from labgpu.accounts.selectors import lab_ids_of
from labgpu.quotas import services
from labgpu.quotas.filters import QuotaFilter, QuotaRequestFilter
from labgpu.quotas.models import Quota, QuotaRequest
from labgpu.quotas.selectors import quota_usage
from labgpu.quotas.serializers import (
    DecisionSerializer,
    QuotaRequestSerializer,
    QuotaSerializer,
    QuotaWriteSerializer,
)


class QuotaViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Quotas of my labs with used / committed / remaining GPU-hours. Site admins set them."""

    queryset = Quota.objects.none()
    serializer_class = QuotaSerializer
    filterset_class = QuotaFilter

    def get_queryset(self) -> QuerySet[Quota]:
        quotas = Quota.objects.select_related("lab", "instance_type").order_by(
            "-month", "lab__name", "instance_type__name"
        )
        if self.request.user.is_site_admin:
            return quotas
        return quotas.filter(lab_id__in=lab_ids_of(self.request.user))

    def _with_usage(self, quota: Quota) -> Quota:
        usage = quota_usage(
            lab_id=quota.lab_id,
            instance_type_id=quota.instance_type_id,
            month=quota.month,
            quota=quota,
        )
        quota.used_gpu_hours = usage.used
        quota.committed_gpu_hours = usage.committed
        quota.remaining_gpu_hours = usage.remaining
        return quota

    def get_serializer(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if args:
            instance = args[0]
            if isinstance(instance, Quota):
                self._with_usage(instance)
            elif instance is not None and not isinstance(instance, dict):
                args = ([self._with_usage(quota) for quota in instance], *args[1:])
        return super().get_serializer(*args, **kwargs)

    @extend_schema(request=QuotaWriteSerializer, responses={201: QuotaSerializer})
    def create(self, request: Request) -> Response:
        """Set a lab's quota for an instance type and month (site admins; audited)."""
        body = QuotaWriteSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        quota = services.quota_set(actor=request.user, **body.validated_data)
        return Response(self.get_serializer(quota).data, status=status.HTTP_201_CREATED)


class QuotaRequestViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    queryset = QuotaRequest.objects.none()
    serializer_class = QuotaRequestSerializer
    filterset_class = QuotaRequestFilter

    def get_queryset(self) -> QuerySet[QuotaRequest]:
        requests = QuotaRequest.objects.select_related(
            "lab", "instance_type", "requested_by", "decided_by"
        )
        if self.request.user.is_site_admin:
            return requests
        return requests.filter(lab_id__in=lab_ids_of(self.request.user))

    def create(self, request: Request) -> Response:
        body = QuotaRequestSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        quota_request = services.quota_request_create(actor=request.user, **body.validated_data)
        return Response(QuotaRequestSerializer(quota_request).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=DecisionSerializer, responses=QuotaRequestSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        return self._decide(request, services.quota_request_approve)

    @extend_schema(request=DecisionSerializer, responses=QuotaRequestSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        return self._decide(request, services.quota_request_reject)

    def _decide(self, request: Request, service: Callable[..., QuotaRequest]) -> Response:
        quota_request = self.get_object()  # outsiders get 404 whatever they send
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        decided = service(actor=request.user, request=quota_request, **body.validated_data)
        return Response(QuotaRequestSerializer(decided).data)

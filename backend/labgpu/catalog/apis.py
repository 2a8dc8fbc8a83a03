from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from labgpu.api.permissions import SITE_ADMIN, SITE_ADMIN_OR_READ_ONLY
from labgpu.bookings.blackouts import blackout_clashes, blackout_create
from labgpu.bookings.serializers import BlackoutClashSerializer, BlackoutCreatedSerializer
from labgpu.catalog.filters import BlackoutFilter
from labgpu.catalog.models import Blackout, InstanceType, NodePool, ProviderAccount
from labgpu.catalog.selectors import pools_visible_to
from labgpu.catalog.serializers import (
    BlackoutSerializer,
    InstanceTypeSerializer,
    NodePoolSerializer,
    ProviderAccountSerializer,
)


class ProviderAccountViewSet(viewsets.ModelViewSet):
    """Cloud accounts (site admins only). The token lives in the named environment variable."""

    queryset = ProviderAccount.objects.order_by("name")
    serializer_class = ProviderAccountSerializer
    permission_classes = SITE_ADMIN


class InstanceTypeViewSet(viewsets.ModelViewSet):
    queryset = InstanceType.objects.order_by("name")
    serializer_class = InstanceTypeSerializer
    permission_classes = SITE_ADMIN_OR_READ_ONLY
    filterset_fields = ["gpu_vendor", "is_active"]


class NodePoolViewSet(viewsets.ModelViewSet):
    queryset = NodePool.objects.none()
    serializer_class = NodePoolSerializer
    permission_classes = SITE_ADMIN_OR_READ_ONLY
    filterset_fields = ["instance_type", "region", "requires_approval", "is_active"]

    def get_queryset(self) -> QuerySet[NodePool]:
        return pools_visible_to(self.request.user).prefetch_related("allowed_labs").order_by("name")


class BlackoutViewSet(viewsets.ModelViewSet):
    queryset = Blackout.objects.none()
    serializer_class = BlackoutSerializer
    permission_classes = SITE_ADMIN_OR_READ_ONLY
    filterset_class = BlackoutFilter

    def get_queryset(self) -> QuerySet[Blackout]:
        return Blackout.objects.filter(pool__in=pools_visible_to(self.request.user)).order_by(
            "start"
        )

    @extend_schema(request=BlackoutSerializer, responses={201: BlackoutCreatedSerializer})
    def create(self, request: Request, *args: object, **kwargs: object) -> Response:
        """Close a pool for maintenance. Live bookings it overlaps stay as they are (the admin
        decides about each); they are listed in `clashes` and their owners are emailed."""
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        blackout, clashes = blackout_create(actor=request.user, **serializer.validated_data)
        blackout.clashes = clashes  # type: ignore[attr-defined]
        return Response(BlackoutCreatedSerializer(blackout).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=BlackoutClashSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None, permission_classes=SITE_ADMIN)
    def clashes(self, request: Request, pk: str) -> Response:
        """Live bookings the blackout overlaps (site admins: it names other labs' people)."""
        blackout = self.get_object()
        return Response(BlackoutClashSerializer(blackout_clashes(blackout), many=True).data)

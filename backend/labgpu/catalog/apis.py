from datetime import timedelta

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from labgpu.api.permissions import SITE_ADMIN, SITE_ADMIN_OR_READ_ONLY
from labgpu.bookings.selectors import availability_intervals, busy_blocks, next_free_windows
from labgpu.bookings.serializers import BusyBlockSerializer
from labgpu.catalog.filters import BlackoutFilter
from labgpu.catalog.models import Blackout, InstanceType, NodePool, ProviderAccount
from labgpu.catalog.selectors import pools_visible_to
from labgpu.catalog.serializers import (
    AvailabilityQuerySerializer,
    AvailabilitySerializer,
    BlackoutSerializer,
    InstanceTypeSerializer,
    NodePoolSerializer,
    ProviderAccountSerializer,
)

RANGE_PARAMETERS = [
    OpenApiParameter("start", str, required=True, description="ISO 8601 with offset"),
    OpenApiParameter("end", str, required=True, description="ISO 8601 with offset"),
]


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

    @extend_schema(
        parameters=[
            *RANGE_PARAMETERS,
            OpenApiParameter(
                "duration_minutes",
                int,
                description="Length of the windows to suggest "
                "(default: the pool's minimum duration)",
            ),
        ],
        responses=AvailabilitySerializer,
    )
    @action(detail=True, methods=["get"])
    def availability(self, request: Request, pk: str) -> Response:
        """Free capacity per interval in [start, end), and the next free windows for a duration."""
        pool = self.get_object()
        query = AvailabilityQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        start, end = query.validated_data["start"], query.validated_data["end"]
        minutes = query.validated_data.get("duration_minutes") or pool.min_duration_minutes
        intervals = availability_intervals(pool, start, end)
        windows = next_free_windows(pool, duration=timedelta(minutes=minutes), after=start)
        return Response(
            AvailabilitySerializer(
                {
                    "pool": pool.pk,
                    "capacity": pool.capacity,
                    "duration_minutes": minutes,
                    "intervals": intervals,
                    "next_free": [{"start": s, "end": e} for s, e in windows],
                }
            ).data
        )

    @extend_schema(parameters=RANGE_PARAMETERS, responses=BusyBlockSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None)
    def busy(self, request: Request, pk: str) -> Response:
        """Live bookings in [start, end); other labs' only as anonymous busy blocks (I-6)."""
        pool = self.get_object()
        query = AvailabilityQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        blocks = busy_blocks(pool, query.validated_data["start"], query.validated_data["end"])
        serializer = BusyBlockSerializer(blocks, many=True, context={"request": request})
        return Response(serializer.data)


class BlackoutViewSet(viewsets.ModelViewSet):
    queryset = Blackout.objects.none()
    serializer_class = BlackoutSerializer
    permission_classes = SITE_ADMIN_OR_READ_ONLY
    filterset_class = BlackoutFilter

    def get_queryset(self) -> QuerySet[Blackout]:
        return Blackout.objects.filter(pool__in=pools_visible_to(self.request.user)).order_by(
            "start"
        )

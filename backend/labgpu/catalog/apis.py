from django.db.models import QuerySet
from rest_framework import viewsets

from labgpu.api.permissions import SITE_ADMIN, SITE_ADMIN_OR_READ_ONLY
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

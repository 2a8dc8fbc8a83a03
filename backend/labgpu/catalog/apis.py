from typing import Any

from django.db.models import QuerySet
from rest_framework import serializers, viewsets

from labgpu.api.permissions import SITE_ADMIN, SITE_ADMIN_OR_READ_ONLY
from labgpu.catalog import services
from labgpu.catalog.filters import BlackoutFilter
from labgpu.catalog.models import Blackout, InstanceType, NodePool, ProviderAccount
from labgpu.catalog.selectors import pools_visible_to
from labgpu.catalog.serializers import (
    BlackoutSerializer,
    InstanceTypeSerializer,
    NodePoolSerializer,
    ProviderAccountSerializer,
)


class _AuditedWrites:
    """Creates and changes go through the catalog's service, which checks and audits them."""

    request: Any
    save_service: Any
    instance_kwarg: str

    def perform_create(self, serializer: serializers.ModelSerializer) -> None:
        serializer.instance = self.save_service(
            actor=self.request.user, **serializer.validated_data
        )

    def perform_update(self, serializer: serializers.ModelSerializer) -> None:
        serializer.instance = self.save_service(
            actor=self.request.user,
            **{self.instance_kwarg: serializer.instance},
            **serializer.validated_data,
        )


class ProviderAccountViewSet(_AuditedWrites, viewsets.ModelViewSet):
    """Cloud accounts (site admins only). The token lives in the named environment variable."""

    save_service = staticmethod(services.provider_account_save)
    instance_kwarg = "account"

    queryset = ProviderAccount.objects.order_by("name")
    serializer_class = ProviderAccountSerializer
    permission_classes = SITE_ADMIN


class InstanceTypeViewSet(_AuditedWrites, viewsets.ModelViewSet):
    """GPU machine types and their prices. A new price applies to bookings made from then on:
    a booking keeps the price it was made at, and metering bills that price."""

    save_service = staticmethod(services.instance_type_save)
    instance_kwarg = "instance_type"
    queryset = InstanceType.objects.order_by("name")
    serializer_class = InstanceTypeSerializer
    permission_classes = SITE_ADMIN_OR_READ_ONLY
    filterset_fields = ["gpu_vendor", "is_active"]


class NodePoolViewSet(_AuditedWrites, viewsets.ModelViewSet):
    save_service = staticmethod(services.pool_save)
    instance_kwarg = "pool"
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

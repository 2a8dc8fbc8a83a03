from django.db.models import QuerySet
from rest_framework import viewsets

from labgpu.api.permissions import SITE_ADMIN
from labgpu.provisioning.models import Node
from labgpu.provisioning.serializers import NodeSerializer


class NodeViewSet(viewsets.ReadOnlyModelViewSet):
    """Every node and its state (site admins)."""

    queryset = Node.objects.none()
    serializer_class = NodeSerializer
    permission_classes = SITE_ADMIN
    filterset_fields = ["status", "booking", "provider_account"]

    def get_queryset(self) -> QuerySet[Node]:
        return (
            Node.objects.select_related("booking__user", "booking__lab", "booking__pool")
            .prefetch_related("health_reports")
            .order_by("-created_at")
        )

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from labgpu.api.permissions import SITE_ADMIN
from labgpu.bookings.serializers import ReasonSerializer
from labgpu.provisioning.models import Node
from labgpu.provisioning.serializers import NodeSerializer
from labgpu.provisioning.services.actions import node_destroy, node_retry


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

    def _fresh(self, pk: int) -> Response:
        return Response(NodeSerializer(self.get_queryset().get(pk=pk)).data)

    @extend_schema(request=None, responses=NodeSerializer)
    @action(detail=True, methods=["post"])
    def retry(self, request: Request, pk: str) -> Response:
        """Run the node's pending provider step (create or destroy) again now. Audited."""
        node = self.get_object()
        node_retry(actor=request.user, node_id=node.pk)
        return self._fresh(node.pk)

    @extend_schema(request=ReasonSerializer, responses=NodeSerializer)
    @action(detail=True, methods=["post"], url_path="destroy")
    def destroy_node(self, request: Request, pk: str) -> Response:
        """Give the node up and tear it down; its booking gets a replacement if it may. Audited."""
        node = self.get_object()
        body = ReasonSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        node_destroy(actor=request.user, node_id=node.pk, reason=body.validated_data["reason"])
        return self._fresh(node.pk)

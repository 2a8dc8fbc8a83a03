from django.db.models import OuterRef, QuerySet, Subquery
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from labgpu.api.parsers import SafeJSONParser
from labgpu.chat import selectors, services
from labgpu.chat.models import ChatChannel, ChatDelivery
from labgpu.chat.serializers import (
    ChatChannelCreateSerializer,
    ChatChannelSerializer,
    ChatChannelUpdateSerializer,
    ChatDeliverySerializer,
)


class ChannelBodyParser(SafeJSONParser):
    # A channel is a name, a URL, a secret and a few events: anything bigger is not one.
    max_bytes = 16 * 1024


class ChatChannelViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Chat notification channels: yours, and those of the labs you administer. The webhook URL
    and secret go in once, at creation, and never come back (`hint` shows which one it is)."""

    queryset = ChatChannel.objects.none()
    serializer_class = ChatChannelSerializer
    pagination_class = None
    parser_classes = [ChannelBodyParser]

    def get_queryset(self) -> QuerySet[ChatChannel]:
        last = ChatDelivery.objects.filter(channel=OuterRef("pk")).order_by("-created_at", "-pk")
        return (
            selectors.channels_visible_to(self.request.user)
            .select_related("lab")
            .annotate(last_status=Subquery(last.values("status")[:1]))
            .order_by("lab_id", "name", "pk")
        )

    @extend_schema(request=ChatChannelCreateSerializer, responses={201: ChatChannelSerializer})
    def create(self, request: Request) -> Response:
        body = ChatChannelCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        channel = services.channel_create(actor=request.user, **body.validated_data)
        return Response(ChatChannelSerializer(channel).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=ChatChannelUpdateSerializer, responses={200: ChatChannelSerializer})
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        body = ChatChannelUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        channel = services.channel_update(
            actor=request.user, channel=self.get_object(), **body.validated_data
        )
        return Response(ChatChannelSerializer(channel).data)

    def perform_destroy(self, instance: ChatChannel) -> None:
        services.channel_delete(actor=self.request.user, channel=instance)

    @extend_schema(request=None, responses={202: ChatDeliverySerializer})
    @action(detail=True, methods=["post"])
    def test(self, request: Request, pk: str | None = None) -> Response:
        """Send a test message now (through the same queue as real events)."""
        delivery = services.channel_test(actor=request.user, channel=self.get_object())
        return Response(ChatDeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: ChatDeliverySerializer(many=True)})
    @action(detail=True, methods=["get"])
    def deliveries(self, request: Request, pk: str | None = None) -> Response:
        """The channel's last 50 deliveries, newest first."""
        deliveries = selectors.deliveries_of(self.get_object())
        return Response(ChatDeliverySerializer(deliveries, many=True).data)

from django.db.models import QuerySet
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labgpu.accounts.models import ApiToken
from labgpu.feeds import selectors, services
from labgpu.feeds.ics import feed_calendar
from labgpu.feeds.models import CalendarFeed
from labgpu.feeds.serializers import (
    CalendarFeedCreatedSerializer,
    CalendarFeedCreateSerializer,
    CalendarFeedSerializer,
)


class CalendarFeedViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """ICS subscription feeds: your bookings, or a pool's. The URL is returned once, by create;
    DELETE revokes it."""

    queryset = CalendarFeed.objects.none()
    serializer_class = CalendarFeedSerializer
    pagination_class = None
    # A feed is a credential of its own: sessions and `feeds`-scoped tokens make them (docs/api.md).
    token_scope = "feeds"

    def get_queryset(self) -> QuerySet[CalendarFeed]:
        return selectors.feeds_of(self.request.user)

    @extend_schema(
        request=CalendarFeedCreateSerializer, responses={201: CalendarFeedCreatedSerializer}
    )
    def create(self, request: Request) -> Response:
        body = CalendarFeedCreateSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        feed, raw = services.feed_create(
            user=request.user,
            kind=body.validated_data["kind"],
            pool=body.validated_data.get("pool"),
            token=request.auth if isinstance(request.auth, ApiToken) else None,
        )
        data = CalendarFeedCreatedSerializer(feed).data
        data["token"] = raw
        data["url"] = request.build_absolute_uri(reverse("feed-ics", kwargs={"token": raw}))
        return Response(data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: CalendarFeed) -> None:
        services.feed_revoke(feed=instance)


class FirstRendererNegotiation(BaseContentNegotiation):
    """Calendar apps send all sorts of Accept headers; errors are always the JSON shape."""

    def select_renderer(self, request, renderers, format_suffix=None):  # type: ignore[no-untyped-def]
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):  # type: ignore[no-untyped-def]
        return parsers[0] if parsers else None


class CalendarFeedIcsView(APIView):
    """The subscription itself. The secret in the URL is the only credential (calendar apps
    cannot send headers); unknown or revoked secrets are 404."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    content_negotiation_class = FirstRendererNegotiation

    @extend_schema(
        operation_id="v1_feeds_ics_retrieve",
        responses={
            (200, "text/calendar"): OpenApiResponse(
                OpenApiTypes.STR, description="RFC 5545 calendar, times in UTC"
            )
        },
    )
    def get(self, request: Request, token: str) -> HttpResponse:
        feed = selectors.feed_for_secret(token)
        body = feed_calendar(
            feed, selectors.feed_bookings(feed), own_lab_ids=selectors.own_lab_ids(feed)
        )
        response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
        response["Content-Disposition"] = 'inline; filename="labgpu.ics"'
        response["Cache-Control"] = "private, max-age=300"
        return response

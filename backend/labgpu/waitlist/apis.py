from collections.abc import Callable

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from labgpu.waitlist import services
from labgpu.waitlist.models import WaitlistEntry
from labgpu.waitlist.selectors import entries_visible_to
from labgpu.waitlist.serializers import WaitlistEntrySerializer, WaitlistJoinSerializer


class WaitlistViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The waitlist of full windows: join, see your place, take or decline an offer, leave
    (labgpu/waitlist/services.py states the fairness rule)."""

    queryset = WaitlistEntry.objects.none()
    serializer_class = WaitlistEntrySerializer

    def token_scope(self, request: Request) -> str | None:
        return "book" if self.action in {"create", "accept", "decline", "leave"} else None

    def get_queryset(self) -> QuerySet[WaitlistEntry]:
        if getattr(self, "swagger_fake_view", False):
            return WaitlistEntry.objects.none()
        entries = entries_visible_to(self.request.user).select_related(
            "user", "pool__instance_type", "booking__pool"
        )
        wanted = self.request.query_params.get("status")
        if wanted == "active":
            entries = entries.filter(status__in=WaitlistEntry.ACTIVE_STATUSES)
        return entries.order_by("-id")

    @extend_schema(request=WaitlistJoinSerializer, responses={201: WaitlistEntrySerializer})
    def create(self, request: Request) -> Response:
        """Join the waitlist of a full window (a pool, or any pool of a GPU model)."""
        body = WaitlistJoinSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        entry = services.waitlist_join(user=request.user, **body.validated_data)
        entry = self.get_queryset().get(pk=entry.pk)
        return Response(WaitlistEntrySerializer(entry).data, status=status.HTTP_201_CREATED)

    def _act(self, request: Request, service: Callable[..., WaitlistEntry]) -> Response:
        entry = self.get_object()
        service(actor=request.user, entry=entry)
        return Response(WaitlistEntrySerializer(self.get_queryset().get(pk=entry.pk)).data)

    @extend_schema(request=None, responses=WaitlistEntrySerializer)
    @action(detail=True, methods=["post"])
    def accept(self, request: Request, pk: str) -> Response:
        """Take the held offer: its booking is scheduled (pending where the pool needs approval)."""
        return self._act(request, services.waitlist_offer_accept)

    @extend_schema(request=None, responses=WaitlistEntrySerializer)
    @action(detail=True, methods=["post"])
    def decline(self, request: Request, pk: str) -> Response:
        """Turn the offer down: it passes to the next in line and this entry ends."""
        return self._act(request, services.waitlist_offer_decline)

    @extend_schema(request=None, responses=WaitlistEntrySerializer)
    @action(detail=True, methods=["post"])
    def leave(self, request: Request, pk: str) -> Response:
        """Leave the waitlist (an open offer passes to the next in line)."""
        return self._act(request, services.waitlist_leave)

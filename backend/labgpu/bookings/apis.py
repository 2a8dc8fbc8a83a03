from collections.abc import Callable

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.filters import OrderingFilter
from rest_framework.request import Request
from rest_framework.response import Response

from labgpu.bookings import services
from labgpu.bookings.filters import BookingFilter
from labgpu.bookings.models import Booking
from labgpu.bookings.selectors import bookings_visible_to
from labgpu.bookings.serializers import (
    BookingCreateSerializer,
    BookingExtendSerializer,
    BookingSerializer,
    ReasonSerializer,
)
from labgpu.core.errors import ApplicationError

BOOK_ACTIONS = {"create", "cancel", "extend"}


class BookingViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    queryset = Booking.objects.none()
    serializer_class = BookingSerializer
    filterset_class = BookingFilter
    filter_backends = [*viewsets.GenericViewSet.filter_backends, OrderingFilter]
    ordering_fields = ["start", "created_at", "end"]

    def token_scope(self, request: Request) -> str | None:
        return "book" if self.action in BOOK_ACTIONS else None

    def get_queryset(self) -> QuerySet[Booking]:
        return bookings_visible_to(self.request.user).order_by("start", "id")

    @extend_schema(
        request=BookingCreateSerializer,
        responses={201: BookingSerializer, 200: BookingSerializer},
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                description="Retrying with the same key returns the original booking (200).",
            )
        ],
    )
    def create(self, request: Request) -> Response:
        serializer = BookingCreateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        key = request.headers.get("Idempotency-Key", "").strip() or None
        if key and len(key) > 255:
            raise ApplicationError(
                "Idempotency-Key is at most 255 characters.", code="invalid_idempotency_key"
            )
        data = serializer.validated_data
        booking, created = services.booking_create(
            user=request.user,
            pool=data["pool"],
            start=data.get("start"),
            end=data["end"],
            purpose=data.get("purpose", ""),
            lab=data.get("lab"),
            idempotency_key=key,
            request_fingerprint=services.idempotency_fingerprint(
                {name: getattr(value, "pk", value) for name, value in data.items()}
            ),
        )
        headers = {"Location": f"/api/v1/bookings/{booking.pk}/"}
        if not created:
            headers["Idempotent-Replayed"] = "true"
        return Response(
            BookingSerializer(booking).data,
            headers=headers,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    def _act(self, request: Request, body_class: type, service: Callable[..., Booking]) -> Response:
        """Find the booking first (outsiders get 404 whatever they send), then read the body."""
        booking = self.get_object()
        body = body_class(data=request.data)
        body.is_valid(raise_exception=True)
        booking = service(actor=request.user, booking=booking, **body.validated_data)
        return Response(BookingSerializer(booking).data)

    @extend_schema(request=ReasonSerializer, responses=BookingSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        """Cancel before the start, or end early once it runs (the node is torn down)."""
        return self._act(request, ReasonSerializer, services.booking_cancel)

    @extend_schema(request=BookingExtendSerializer, responses=BookingSerializer)
    @action(detail=True, methods=["post"])
    def extend(self, request: Request, pk: str) -> Response:
        return self._act(request, BookingExtendSerializer, services.booking_extend)

    @extend_schema(request=ReasonSerializer, responses=BookingSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        return self._act(request, ReasonSerializer, services.booking_approve)

    @extend_schema(request=ReasonSerializer, responses=BookingSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        return self._act(request, ReasonSerializer, services.booking_reject)

from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labgpu.bookings import services
from labgpu.bookings.apis import _booking_membership
from labgpu.bookings.placement.selectors import (
    placement_alternatives,
    placement_windows,
    window_payload,
)
from labgpu.bookings.placement.serializers import (
    PlacementAvailabilitySerializer,
    PlacementBookSerializer,
    PlacementQuerySerializer,
)
from labgpu.bookings.placement.services import bookable_pools, booking_place
from labgpu.bookings.serializers import BookingSerializer
from labgpu.core.errors import ApplicationError


class PlacementAvailabilityView(APIView):
    """The earliest window of each pool of a GPU model your lab may book, earliest first; when
    none fits, the earliest alternatives in any region and later."""

    @extend_schema(parameters=[PlacementQuerySerializer], responses=PlacementAvailabilitySerializer)
    def get(self, request: Request) -> Response:
        query = PlacementQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        ask = query.placement()
        membership = _booking_membership(request.user, query.validated_data.get("lab"))
        lab_id = membership.lab_id if membership else None
        pools = bookable_pools(user=request.user, lab_id=lab_id, ask=ask)
        windows = placement_windows(pools, user=request.user, membership=membership, ask=ask)
        alternatives = (
            []
            if windows
            else placement_alternatives(
                user=request.user, lab_id=lab_id, membership=membership, ask=ask
            )
        )
        return Response(
            {
                "gpu_model": ask.gpu_model,
                "duration_minutes": ask.minutes,
                "regions": list(ask.regions),
                "windows": [window_payload(w) for w in windows[: query.validated_data["count"]]],
                "alternatives": [window_payload(w) for w in alternatives],
            }
        )


class PlacementBookView(APIView):
    """Book the earliest window of a GPU model across the pools your lab may book."""

    token_scope = "book"

    @extend_schema(
        request=PlacementBookSerializer,
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
    def post(self, request: Request) -> Response:
        serializer = PlacementBookSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        key = request.headers.get("Idempotency-Key", "").strip() or None
        if key and len(key) > 255:
            raise ApplicationError(
                _("Idempotency-Key is at most 255 characters."), code="invalid_idempotency_key"
            )
        data = serializer.validated_data
        booking, created = booking_place(
            user=request.user,
            ask=serializer.placement(),
            lab=data.get("lab"),
            purpose=data.get("purpose", ""),
            jupyter=data.get("jupyter", False),
            cost_centre=data.get("cost_centre"),
            idempotency_key=key,
            request_fingerprint=services.idempotency_fingerprint(
                {"placement": True, **{k: getattr(v, "pk", v) for k, v in data.items()}}
            )
            if key
            else "",
        )
        headers = {"Location": f"/api/v1/bookings/{booking.pk}/"}
        if not created:
            headers["Idempotent-Replayed"] = "true"
        return Response(
            BookingSerializer(booking).data,
            headers=headers,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

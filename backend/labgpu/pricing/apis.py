from dataclasses import asdict

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labgpu.api.permissions import SITE_ADMIN, SITE_ADMIN_OR_READ_ONLY
from labgpu.catalog.models import InstanceType
from labgpu.pricing import services
from labgpu.pricing.selectors import price_list, price_rows
from labgpu.pricing.serializers import (
    AdjustmentInputSerializer,
    DisplayCurrencyInputSerializer,
    DisplayCurrencySerializer,
    PriceListSerializer,
    PriceRowSerializer,
    SyncResultSerializer,
)


class PriceListView(APIView):
    """Prices in force now (USD): each instance type's provider price beside the site admin's
    adjustment and the price labs pay, the volume price, the display currency."""

    @extend_schema(responses=PriceListSerializer)
    def get(self, request: Request) -> Response:
        return Response(PriceListSerializer(price_list()).data)


class PriceSyncView(APIView):
    """Read the providers' price lists now (site admins); the beat does it hourly."""

    permission_classes = SITE_ADMIN

    @extend_schema(request=None, responses=SyncResultSerializer)
    def post(self, request: Request) -> Response:
        result = services.prices_sync(actor=request.user)
        return Response(SyncResultSerializer(asdict(result)).data)


class PriceHistoryView(APIView):
    """Every price an instance type has had, newest first, with its effective time."""

    @extend_schema(responses=PriceRowSerializer(many=True))
    def get(self, request: Request, pk: int) -> Response:
        instance_type = get_object_or_404(InstanceType, pk=pk)
        return Response(PriceRowSerializer(price_rows(instance_type), many=True).data)


class PriceAdjustmentView(APIView):
    """Set the site admin's percent on the provider's price, effective now (audited)."""

    permission_classes = SITE_ADMIN

    @extend_schema(request=AdjustmentInputSerializer, responses=PriceRowSerializer)
    def post(self, request: Request, pk: int) -> Response:
        instance_type = get_object_or_404(InstanceType, pk=pk)
        body = AdjustmentInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        row = services.price_adjustment_set(
            actor=request.user,
            instance_type=instance_type,
            adjustment_pct=body.validated_data["adjustment_pct"],
        )
        return Response(PriceRowSerializer(row).data)


class DisplayCurrencyView(APIView):
    """The optional display currency and its rate per USD (site admins change it, audited)."""

    permission_classes = SITE_ADMIN_OR_READ_ONLY

    @extend_schema(responses=DisplayCurrencySerializer)
    def get(self, request: Request) -> Response:
        current = price_list()["display_currency"] or {"code": "", "rate": None, "rate_date": None}
        return Response(DisplayCurrencySerializer(current).data)

    @extend_schema(request=DisplayCurrencyInputSerializer, responses=DisplayCurrencySerializer)
    def put(self, request: Request) -> Response:
        body = DisplayCurrencyInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        row = services.display_currency_set(
            actor=request.user,
            code=body.validated_data["code"],
            rate=body.validated_data.get("rate"),
            rate_date=body.validated_data.get("rate_date"),
        )
        return Response(
            DisplayCurrencySerializer(
                {"code": row.code, "rate": row.rate, "rate_date": row.rate_date}
            ).data
        )

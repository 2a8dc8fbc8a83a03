import csv
import io
import re
from zoneinfo import ZoneInfo

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labgpu.usage.selectors import (
    storage_by_lab,
    storage_visible_to,
    usage_aggregate,
    usage_visible_to,
)
from labgpu.usage.serializers import (
    StorageQuerySerializer,
    StorageRowSerializer,
    UsageQuerySerializer,
    UsageRowSerializer,
)

# A cell starting with one of these is a formula to Excel, LibreOffice and Sheets (CSV injection);
# OWASP's advice: prefix it with a single quote, which makes it text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
PLAIN_NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")


def csv_safe(value: object) -> object:
    """`value` as a spreadsheet shows it, never runs it: text that could start a formula gets a
    leading `'`; numbers (also negative ones written as text, e.g. a cost) stay numbers."""
    if (
        isinstance(value, str)
        and value.startswith(FORMULA_STARTS)
        and not PLAIN_NUMBER.match(value)
    ):
        return "'" + value
    return value


class CSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):  # type: ignore[no-untyped-def]
        rows = data if isinstance(data, list) else [data]
        out = io.StringIO()
        # No rows still writes the header (the serializer's columns): an empty body would lose
        # its Content-Type (DRF drops it), and a spreadsheet would not know the columns.
        listed = getattr(data, "serializer", None)
        child = getattr(listed, "child", None)
        columns = list(dict.fromkeys(key for row in rows for key in row)) or (
            list(child.fields) if child is not None else []
        )
        if columns:
            writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows({key: csv_safe(value) for key, value in row.items()} for row in rows)
        return out.getvalue().encode()


class UsageView(APIView):
    """GPU-hours and cost by lab, user, pool, instance type and day over a range; `?format=csv`
    exports the same rows. Researchers see their own use, lab admins their labs'."""

    renderer_classes = [JSONRenderer, CSVRenderer]

    def finalize_response(self, request, response, *args, **kwargs):  # type: ignore[no-untyped-def]
        # Errors keep the one JSON error shape even when CSV was asked for.
        if response.status_code >= 400:
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)

    @extend_schema(
        parameters=[UsageQuerySerializer, OpenApiParameter("format", str, enum=["json", "csv"])],
        responses=UsageRowSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        query = UsageQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        records = usage_visible_to(request.user).filter(
            started_at__lt=data["end"], ended_at__gt=data["start"]
        )
        if "lab" in data:
            records = records.filter(lab_id=data["lab"])
        rows = usage_aggregate(
            records,
            start=data["start"],
            end=data["end"],
            group_by=data["group_by"],
            tz=ZoneInfo(request.user.timezone),
            include_provider_cost=data["include_provider_cost"] and request.user.is_site_admin,
        )
        response = Response(UsageRowSerializer(rows, many=True).data)
        if getattr(request.accepted_renderer, "format", "") == "csv":
            response["Content-Disposition"] = 'attachment; filename="labgpu-usage.csv"'
        return response


class StorageUsageView(APIView):
    """Persistent-volume storage per lab in [start, end): GB-months and cost, beside GPU usage.
    Same visibility as usage: researchers their own, lab admins their labs', site admins all."""

    @extend_schema(parameters=[StorageQuerySerializer], responses=StorageRowSerializer(many=True))
    def get(self, request: Request) -> Response:
        query = StorageQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        start, end = query.validated_data["start"], query.validated_data["end"]
        records = storage_visible_to(request.user).filter(started_at__lt=end, ended_at__gt=start)
        rows = storage_by_lab(records, start=start, end=end)
        return Response(StorageRowSerializer(rows, many=True).data)

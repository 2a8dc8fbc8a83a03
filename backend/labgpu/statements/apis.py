from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labgpu.accounts.models import Lab
from labgpu.accounts.selectors import is_lab_admin, labs_visible_to
from labgpu.core.errors import NotPermitted
from labgpu.statements.render import statement_html, statement_pdf
from labgpu.statements.selectors import Statement, previous_month, statement_build
from labgpu.statements.serializers import StatementQuerySerializer, StatementSerializer


def _statement(request: Request, lab_pk: int) -> tuple[Statement, str]:
    """The statement a lab admin (or site admin) asked for; 404 outside the caller's labs."""
    lab = get_object_or_404(labs_visible_to(request.user), pk=lab_pk)
    if not is_lab_admin(request.user, lab.pk):
        raise NotPermitted(
            _("Only the lab's admins can read its statements."), code="not_lab_admin"
        )
    query = StatementQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    month = query.validated_data.get("month") or previous_month(timezone.now().date())
    language = query.validated_data.get("language") or request.user.language
    return statement_build(lab=Lab.objects.get(pk=lab.pk), month=month), language


class StatementView(APIView):
    """A lab's monthly statement (UTC month): lines per user, cost centre and pool, GPU and
    storage cost in USD, totals equal to the usage ledger to the cent."""

    @extend_schema(parameters=[StatementQuerySerializer], responses=StatementSerializer)
    def get(self, request: Request, lab_pk: int) -> Response:
        statement, _language = _statement(request, lab_pk)
        return Response(StatementSerializer(statement).data)


class StatementPdfView(APIView):
    """The statement as a PDF in the caller's language (or `language`)."""

    @extend_schema(
        parameters=[StatementQuerySerializer],
        responses={(200, "application/pdf"): OpenApiResponse(OpenApiTypes.BINARY)},
    )
    def get(self, request: Request, lab_pk: int) -> HttpResponse:
        statement, language = _statement(request, lab_pk)
        response = HttpResponse(statement_pdf(statement, language=language), "application/pdf")
        name = f"labgpu-statement-{statement.lab.pk}-{statement.month:%Y-%m}.pdf"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


class StatementHtmlView(APIView):
    """The statement as a printable HTML page in the caller's language (or `language`)."""

    @extend_schema(
        parameters=[StatementQuerySerializer],
        responses={(200, "text/html"): OpenApiResponse(OpenApiTypes.STR)},
    )
    def get(self, request: Request, lab_pk: int) -> HttpResponse:
        statement, language = _statement(request, lab_pk)
        return HttpResponse(
            statement_html(statement, language=language), "text/html; charset=utf-8"
        )

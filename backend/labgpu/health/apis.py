from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labgpu.api.parsers import SafeJSONParser
from labgpu.api.permissions import BASE_PERMISSIONS, SITE_ADMIN
from labgpu.bookings.selectors import bookings_visible_to
from labgpu.catalog.models import InstanceType
from labgpu.core.errors import ApplicationError
from labgpu.health import services
from labgpu.health.authentication import (
    BootstrapTokenAuthentication,
    HeartbeatTokenAuthentication,
    IsNode,
)
from labgpu.health.limits import MAX_HEARTBEAT_BYTES, MAX_REPORT_BYTES
from labgpu.health.models import HealthReport
from labgpu.health.selectors import booking_utilisation, instance_type_baselines
from labgpu.health.serializers import (
    AgentBootstrapSerializer,
    AgentHeartbeatRequestSerializer,
    AgentHeartbeatSerializer,
    AgentNotebookStateSerializer,
    AgentReportSerializer,
    BookingUtilisationSerializer,
    DeepCheckRequestSerializer,
    HealthReportSerializer,
    InstanceTypeHealthSerializer,
)
from labgpu.health.utilisation import booking_keep
from labgpu.provisioning.models import Node
from labgpu.provisioning.selectors import nodes_visible_to


class AgentView(APIView):
    permission_classes = [IsNode]
    throttle_classes: list = []


class AgentBootstrapView(AgentView):
    """The agent's first call, with the single-use bootstrap token from cloud-init."""

    authentication_classes = [BootstrapTokenAuthentication]

    @extend_schema(request=None, responses=AgentBootstrapSerializer)
    def post(self, request: Request) -> Response:
        return Response(services.agent_bootstrap(node=request.auth))


class AgentReportParser(SafeJSONParser):
    max_bytes = MAX_REPORT_BYTES


class AgentReportView(AgentView):
    authentication_classes = [HeartbeatTokenAuthentication]
    parser_classes = [AgentReportParser]

    @extend_schema(request=AgentReportSerializer, responses={201: HealthReportSerializer})
    def post(self, request: Request) -> Response:
        report = services.report_ingest(node=request.auth, payload=request.data)
        return Response(
            {"id": report.pk, "verdict": report.verdict}, status=status.HTTP_201_CREATED
        )


class AgentHeartbeatParser(SafeJSONParser):
    max_bytes = MAX_HEARTBEAT_BYTES


class AgentHeartbeatView(AgentView):
    authentication_classes = [HeartbeatTokenAuthentication]
    parser_classes = [AgentHeartbeatParser]

    @extend_schema(request=AgentHeartbeatRequestSerializer, responses=AgentHeartbeatSerializer)
    def post(self, request: Request) -> Response:
        return Response(
            {"action": services.agent_heartbeat(node=request.auth, payload=request.data)}
        )


class AgentNotebookView(AgentView):
    """The agent says how JupyterLab is doing on its node: starting, running or failed."""

    authentication_classes = [HeartbeatTokenAuthentication]

    @extend_schema(request=AgentNotebookStateSerializer, responses={204: None})
    def post(self, request: Request) -> Response:
        body = AgentNotebookStateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.agent_notebook_state(node=request.auth, state=body.validated_data["state"])
        return Response(status=status.HTTP_204_NO_CONTENT)


class NodeHealthView(APIView):
    """Health reports of one node (its booking's lab, or site admins)."""

    permission_classes = BASE_PERMISSIONS

    @extend_schema(responses=HealthReportSerializer(many=True))
    def get(self, request: Request, pk: int) -> Response:
        node = get_object_or_404(nodes_visible_to(request.user), pk=pk)
        reports = node.health_reports.order_by("-created_at")[:20]
        return Response(HealthReportSerializer(reports, many=True).data)


class NodeDeepCheckView(APIView):
    """Site admins ask a node's agent to run the vendor stress tools (RVS / dcgmi diag); the
    agent picks the request up with its next heartbeat and the report lands in the node's health
    history, marked `deep`."""

    permission_classes = SITE_ADMIN

    @extend_schema(request=None, responses={202: DeepCheckRequestSerializer})
    def post(self, request: Request, pk: int) -> Response:
        node = get_object_or_404(Node.objects.select_related("booking"), pk=pk)
        node = services.node_request_deep_check(node=node, actor=request.user)
        return Response(
            DeepCheckRequestSerializer(
                {
                    "node": node.pk,
                    "status": node.status,
                    "deep_check_requested_at": node.deep_check_requested_at,
                }
            ).data,
            status=status.HTTP_202_ACCEPTED,
        )


class InstanceTypeHealthView(APIView):
    """Baselines (lab-weighted median of each node's latest passing report) and the latest
    reports of a type."""

    permission_classes = BASE_PERMISSIONS

    @extend_schema(responses=InstanceTypeHealthSerializer)
    def get(self, request: Request, pk: int) -> Response:
        instance_type = get_object_or_404(InstanceType, pk=pk)
        reports = HealthReport.objects.filter(instance_type=instance_type)
        if not request.user.is_site_admin:
            reports = reports.filter(node__in=nodes_visible_to(request.user))
        return Response(
            InstanceTypeHealthSerializer(
                {
                    "instance_type": instance_type.pk,
                    "baselines": instance_type_baselines(instance_type),
                    "reports": reports.order_by("-created_at")[:20],
                }
            ).data
        )


class BookingUtilisationView(APIView):
    """Live utilisation of a booking's node (its lab, or site admins): totals, idle state and the
    recent samples behind the booking page's sparklines."""

    permission_classes = BASE_PERMISSIONS

    @extend_schema(responses=BookingUtilisationSerializer)
    def get(self, request: Request, pk: int) -> Response:
        booking = get_object_or_404(bookings_visible_to(request.user), pk=pk)
        return Response(BookingUtilisationSerializer(booking_utilisation(booking)).data)


class BookingKeepView(APIView):
    """The owner answers an idle warning: the node is in use, do not end the booking."""

    permission_classes = BASE_PERMISSIONS

    @extend_schema(request=None, responses=BookingUtilisationSerializer)
    def post(self, request: Request, pk: int) -> Response:
        # Keep takes no body: one sent is a client that means something else (read as JSON, so a
        # malformed one is a 400 too).
        if request.data:
            raise ApplicationError(_("Keep takes no request body."), code="unexpected_body")
        booking = get_object_or_404(bookings_visible_to(request.user), pk=pk)
        booking_keep(actor=request.user, booking=booking)
        return Response(BookingUtilisationSerializer(booking_utilisation(booking)).data)

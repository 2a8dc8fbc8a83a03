from django.conf import settings
from django.db.models import QuerySet
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labgpu.accounts.models import Lab
from labgpu.accounts.selectors import admin_lab_ids_of
from labgpu.api.permissions import SITE_ADMIN
from labgpu.bookings.serializers import ReasonSerializer
from labgpu.catalog.selectors import pools_visible_to
from labgpu.core.errors import ApplicationError, NotFound, NotPermitted
from labgpu.provisioning.models import Node, UntrackedVolume, Volume
from labgpu.provisioning.selectors import pool_ready_times, volumes_visible_to
from labgpu.provisioning.serializers import (
    LabVolumeSizeSerializer,
    NodeSerializer,
    PoolReadyTimeSerializer,
    UntrackedVolumeSerializer,
    VolumeCreateSerializer,
    VolumeResizeSerializer,
    VolumeSerializer,
)
from labgpu.provisioning.services.actions import node_destroy, node_retry
from labgpu.provisioning.services.volume_changes import (
    volume_create_request,
    volume_resize_request,
)
from labgpu.provisioning.services.volumes import (
    lab_volume_size_set,
    volume_delete_as,
    volume_size_for,
    volumes_in_use_ids,
)


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


def _one_volume(request: Request, pk: int) -> Response:
    volume = volumes_visible_to(request.user).select_related("pool").get(pk=pk)
    busy = volumes_in_use_ids([volume])
    return Response(VolumeSerializer(volume, context={"busy": busy}).data)


def _volume_to_change(request: Request, pk: int, refusal: str) -> Volume:
    """The volume `pk` if the user may change it: its owner, the owning lab's admins, or a site
    admin (others see it as missing or get `refusal`)."""
    volume = volumes_visible_to(request.user).filter(pk=pk).first()
    if volume is None:
        raise NotFound(_("No such volume."))
    user = request.user
    allowed = (
        user.is_site_admin
        or volume.owner_user_id == user.pk
        or (volume.owner_lab_id is not None and volume.owner_lab_id in admin_lab_ids_of(user))
    )
    if not allowed:
        raise NotPermitted(refusal)
    return volume


class VolumeListApi(APIView):
    """Persistent volumes: your own and your labs' (site admins: all), with the storage cost
    metered so far and whether a booking uses them."""

    @extend_schema(responses=VolumeSerializer(many=True))
    def get(self, request: Request) -> Response:
        volumes = list(volumes_visible_to(request.user).select_related("pool"))
        busy = volumes_in_use_ids(volumes)
        return Response(VolumeSerializer(volumes, many=True, context={"busy": busy}).data)

    @extend_schema(request=VolumeCreateSerializer, responses={201: VolumeSerializer})
    def post(self, request: Request) -> Response:
        """Create a volume in a pool that offers them: yours, or your lab's where the pool's
        volumes belong to labs. Made at the provider by a worker (state `creating`, then
        `available`). Refused: 409 `volume_exists` (one per owner and region), 400 with the field
        for a pool without volumes, a region not the pool's, a size over the pool's limit."""
        body = VolumeCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        pool = pools_visible_to(request.user).filter(pk=data["pool"]).first()
        if pool is None:
            raise ApplicationError(_("No such pool."), code="not_found", field="pool")
        lab = None
        if "lab" in data:
            lab = Lab.objects.filter(pk=data["lab"]).first()
            if lab is None:
                raise ApplicationError(_("No such lab."), code="not_found", field="lab")
        volume = volume_create_request(
            actor=request.user,
            pool=pool,
            size_gb=data["size_gb"],
            region=data.get("region"),
            lab=lab,
        )
        response = _one_volume(request, volume.pk)
        response.status_code = 201
        return response


class VolumeDetailApi(APIView):
    @extend_schema(responses={204: None})
    def delete(self, request: Request, pk: int) -> Response:
        """Delete a volume and its data: its owner, the owning lab's admins, or a site admin.
        Refused (409 `volume_in_use`) while a booking uses it."""
        volume = _volume_to_change(
            request, pk, _("Only the volume's owner or its lab's admins may delete it.")
        )
        volume_delete_as(actor=request.user, volume=volume)
        return Response(status=204)


class VolumeResizeApi(APIView):
    @extend_schema(request=VolumeResizeSerializer, responses=VolumeSerializer)
    def post(self, request: Request, pk: int) -> Response:
        """Grow a volume (never shrink: the provider resizes volumes upwards only), within its
        pool's limit; its owner, the owning lab's admins, or a site admin. A worker asks the
        provider (`resize_to_gb` until it accepted); storage is billed at the new size from the
        provider's acceptance. After a grow, extend the filesystem on the node
        (`resize2fs` for ext4). Refused: 400 `volume_shrink` / `volume_size_out_of_range` on
        `size_gb`, 409 `volume_busy` or `volume_resize_pending`."""
        volume = _volume_to_change(
            request, pk, _("Only the volume's owner or its lab's admins may grow it.")
        )
        body = VolumeResizeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        size_gb = body.validated_data["size_gb"]
        volume_resize_request(actor=request.user, volume=volume, size_gb=size_gb)
        return _one_volume(request, volume.pk)


class UntrackedVolumeListApi(APIView):
    """Volumes with LabGPU's tag that nothing tracks (site admins): reconcile reports them and
    never deletes them."""

    permission_classes = SITE_ADMIN

    @extend_schema(responses=UntrackedVolumeSerializer(many=True))
    def get(self, request: Request) -> Response:
        rows = UntrackedVolume.objects.filter(resolved_at__isnull=True).order_by("region", "name")
        return Response(UntrackedVolumeSerializer(rows, many=True).data)


class LabVolumeSizeApi(APIView):
    """The size of a lab's new volumes: its lab admins set it, within the site admin's limit."""

    def _lab(self, request: Request, lab_id: int) -> Lab:
        lab = Lab.objects.filter(pk=lab_id).first()
        user = request.user
        if lab is None or not (user.is_site_admin or lab.pk in admin_lab_ids_of(user)):
            raise NotFound(_("No such lab among those you administer."))
        return lab

    def _answer(self, lab: Lab) -> Response:
        return Response(
            LabVolumeSizeSerializer(
                {
                    "size_gb": volume_size_for(lab),
                    "limit_gb": settings.LABGPU_VOLUME_MAX_GB,
                    "default_gb": settings.LABGPU_VOLUME_DEFAULT_GB,
                }
            ).data
        )

    @extend_schema(responses=LabVolumeSizeSerializer)
    def get(self, request: Request, lab_id: int) -> Response:
        return self._answer(self._lab(request, lab_id))

    @extend_schema(request=LabVolumeSizeSerializer, responses=LabVolumeSizeSerializer)
    def put(self, request: Request, lab_id: int) -> Response:
        lab = self._lab(request, lab_id)
        body = LabVolumeSizeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        lab_volume_size_set(lab=lab, size_gb=body.validated_data["size_gb"])
        return self._answer(lab)


class PoolReadyTimesApi(APIView):
    """How long each pool you may book takes to hand a node over (creation to ready): the booking
    form shows it beside "Start now". Pools with no ready node yet are left out."""

    @extend_schema(responses=PoolReadyTimeSerializer(many=True))
    def get(self, request: Request) -> Response:
        pool_ids = list(pools_visible_to(request.user).values_list("id", flat=True))
        times = pool_ready_times(pool_ids=pool_ids)
        return Response(
            PoolReadyTimeSerializer(sorted(times.values(), key=lambda t: t["pool"]), many=True).data
        )

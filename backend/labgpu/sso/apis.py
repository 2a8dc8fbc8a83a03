from django.conf import settings
from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labgpu.accounts.backends import password_login_enabled
from labgpu.api.permissions import SITE_ADMIN
from labgpu.sso import services
from labgpu.sso.models import GroupMapping
from labgpu.sso.serializers import AuthProvidersSerializer, GroupMappingSerializer


class AuthProvidersView(APIView):
    """How one may sign in here, for the login page (no session needed)."""

    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(responses=AuthProvidersSerializer)
    def get(self, request: Request) -> Response:
        providers = []
        if settings.LABGPU_OIDC_ENABLED:
            providers.append(
                {
                    "id": "oidc",
                    "name": settings.LABGPU_OIDC_NAME,
                    "login_url": reverse("oidc_authentication_init"),
                }
            )
        return Response(
            AuthProvidersSerializer(
                {"password_login": password_login_enabled(), "providers": providers}
            ).data
        )


class GroupMappingViewSet(viewsets.ModelViewSet):
    """Directory groups → lab roles or site admin (site admins only). Every change is audited;
    it takes effect at each person's next sign-in or directory sync."""

    queryset = GroupMapping.objects.none()
    serializer_class = GroupMappingSerializer
    permission_classes = SITE_ADMIN
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    filterset_fields = ["lab", "role"]

    def get_queryset(self) -> QuerySet[GroupMapping]:
        return GroupMapping.objects.select_related("lab").order_by("group", "lab__name")

    def create(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        mapping = services.group_mapping_save(
            actor=request.user, mapping=GroupMapping(**serializer.validated_data)
        )
        return Response(self.get_serializer(mapping).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request: Request, pk: str) -> Response:
        mapping = self.get_object()
        serializer = self.get_serializer(mapping, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        for name, value in serializer.validated_data.items():
            setattr(mapping, name, value)
        mapping = services.group_mapping_save(actor=request.user, mapping=mapping)
        return Response(self.get_serializer(mapping).data)

    def destroy(self, request: Request, pk: str) -> Response:
        services.group_mapping_delete(actor=request.user, mapping=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

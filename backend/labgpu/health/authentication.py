from django.contrib.auth.models import AnonymousUser
from django.utils.translation import gettext as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from labgpu.provisioning.models import Node
from labgpu.provisioning.tokens import BOOTSTRAP_PREFIX, HEARTBEAT_PREFIX, hash_secret


class _NodeTokenAuthentication(authentication.BaseAuthentication):
    """A node's agent authenticates as the node, never as a user (I-6: tokens stay node-scoped)."""

    prefix = ""
    field = ""

    def authenticate(self, request: Request) -> tuple[AnonymousUser, Node] | None:
        parts = authentication.get_authorization_header(request).decode(errors="replace").split()
        if len(parts) != 2 or parts[0] != "Bearer" or not parts[1].startswith(self.prefix):
            raise exceptions.AuthenticationFailed(_("A node token is required."))
        node = (
            Node.objects.select_related("booking__pool__instance_type")
            .filter(**{self.field: hash_secret(parts[1])})
            .first()
        )
        if node is None or node.status == Node.Status.DESTROYED:
            raise exceptions.AuthenticationFailed(_("Unknown or retired node token."))
        return AnonymousUser(), node

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"


class BootstrapTokenAuthentication(_NodeTokenAuthentication):
    prefix = BOOTSTRAP_PREFIX
    field = "bootstrap_token_hash"


class HeartbeatTokenAuthentication(_NodeTokenAuthentication):
    prefix = HEARTBEAT_PREFIX
    field = "heartbeat_token_hash"


class IsNode(permissions.BasePermission):
    def has_permission(self, request: Request, view: object) -> bool:
        return isinstance(request.auth, Node)


class BootstrapTokenScheme(OpenApiAuthenticationExtension):
    target_class = "labgpu.health.authentication.BootstrapTokenAuthentication"
    name = "nodeBootstrapToken"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "Bootstrap token (until the node's first report)",
        }


class HeartbeatTokenScheme(OpenApiAuthenticationExtension):
    target_class = "labgpu.health.authentication.HeartbeatTokenAuthentication"
    name = "nodeHeartbeatToken"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {"type": "http", "scheme": "bearer", "description": "Node heartbeat token"}

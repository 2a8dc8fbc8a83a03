from django.contrib.auth import authenticate, login
from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_protect
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from labgpu.accounts import selectors as account_selectors
from labgpu.accounts.authentication import CsrfCheckedSessionAuthentication
from labgpu.accounts.emails import users_with_verified_email
from labgpu.accounts.models import Lab, User
from labgpu.accounts.serializers import MeSerializer
from labgpu.accounts.services import require_lab_admin
from labgpu.api.throttling import LoginRateThrottle
from labgpu.core.timeutils import now
from labgpu.invitations import services
from labgpu.invitations.models import Invitation
from labgpu.invitations.serializers import (
    InvitationAcceptedSerializer,
    InvitationAcceptSerializer,
    InvitationCreatedSerializer,
    InvitationCreateSerializer,
    InvitationPreviewSerializer,
    InvitationSerializer,
    InvitationSignUpSerializer,
    InvitationTokenSerializer,
)


class InvitationRateThrottle(SimpleRateThrottle):
    """Invitations each lab admin may send (LABGPU_THROTTLE_INVITE): mail to strangers is cheap
    to ask for and costly to the site's mail reputation."""

    scope = "invite"

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


class LabInvitationViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """A lab's pending invitations, for its lab admins (and site admins): invite by e-mail,
    list, revoke (DELETE). Accepted invitations show as members; all of it is in the audit log."""

    queryset = Invitation.objects.none()
    serializer_class = InvitationSerializer
    pagination_class = None

    def get_lab(self) -> Lab:
        lab = get_object_or_404(
            account_selectors.labs_visible_to(self.request.user), pk=self.kwargs["lab_pk"]
        )
        require_lab_admin(actor=self.request.user, lab=lab)
        return lab

    def get_queryset(self) -> QuerySet[Invitation]:
        if getattr(self, "swagger_fake_view", False):
            return Invitation.objects.none()
        return (
            self.get_lab()
            .invitations.filter(
                accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=now()
            )
            .select_related("invited_by")
            .order_by("-created_at")
        )

    def get_throttles(self) -> list:
        throttles = super().get_throttles()
        return [*throttles, InvitationRateThrottle()] if self.action == "create" else throttles

    @extend_schema(request=InvitationCreateSerializer, responses={201: InvitationCreatedSerializer})
    def create(self, request: Request, lab_pk: str) -> Response:
        lab = self.get_lab()
        serializer = InvitationCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        invitation, raw = services.invitation_create(
            actor=request.user, lab=lab, **serializer.validated_data
        )
        body = InvitationCreatedSerializer(invitation).data
        body["link"] = services.invitation_link(raw)
        return Response(body, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: Invitation) -> None:
        services.invitation_revoke(actor=self.request.user, invitation=instance)


def _preview(invitation: Invitation, user: User | AnonymousUser) -> dict:
    inviter = invitation.invited_by
    return {
        "lab": invitation.lab,
        "role": invitation.role,
        "email": invitation.email,
        "invited_by": (inviter.get_full_name() or inviter.username) if inviter else None,
        "expires_at": invitation.expires_at,
        "status": invitation.status,
        "signup_allowed": services.local_signup_enabled()
        and not users_with_verified_email(invitation.email).exists(),
        "address_matches": services.invitation_address_matches(invitation=invitation, user=user)
        if user.is_authenticated
        else None,
    }


class InvitationPreviewView(APIView):
    """What an invitation link offers, for its holder, signed in or not. The secret travels in
    the body, so it stays out of access logs."""

    # The default throttles: a link's 256-bit secret cannot be guessed, and the page asks on
    # every load, so the tight login limit would only trip honest readers.
    permission_classes = [AllowAny]

    @extend_schema(request=InvitationTokenSerializer, responses=InvitationPreviewSerializer)
    def post(self, request: Request) -> Response:
        data = InvitationTokenSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        invitation = services.invitation_for_token(data.validated_data["token"])
        return Response(InvitationPreviewSerializer(_preview(invitation, request.user)).data)


class InvitationAcceptView(APIView):
    """The signed-in user joins the lab the link invites to."""

    authentication_classes = [CsrfCheckedSessionAuthentication]  # a person, not a script

    @extend_schema(request=InvitationAcceptSerializer, responses=InvitationAcceptedSerializer)
    def post(self, request: Request) -> Response:
        data = InvitationAcceptSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.invitation_accept(
            user=request.user,
            raw=data.validated_data["token"],
            confirm_other_address=data.validated_data["confirm_other_address"],
        )
        return Response(InvitationAcceptedSerializer(membership).data)


@method_decorator(csrf_protect, name="dispatch")
class InvitationSignUpView(APIView):
    """Someone without an account makes a local one from their invitation and is signed in.
    CSRF-checked though anonymous, as the login is."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginRateThrottle]

    @extend_schema(request=InvitationSignUpSerializer, responses={201: MeSerializer})
    def post(self, request: Request) -> Response:
        data = InvitationSignUpSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        username, password = data.validated_data["username"], data.validated_data["password"]
        user, _ = services.invitation_sign_up(
            raw=data.validated_data["token"], username=username, password=password
        )
        # Through the configured backends, so the session names one that will find the user.
        signed_in = authenticate(request._request, username=user.username, password=password)
        if signed_in is not None:
            login(request, signed_in)
        user = account_selectors.user_with_labs(user)
        return Response(MeSerializer(user).data, status=status.HTTP_201_CREATED)

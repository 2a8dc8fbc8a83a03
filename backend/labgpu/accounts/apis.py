from django.contrib.auth import login, logout
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_protect, ensure_csrf_cookie
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from labgpu.accounts import emails, selectors, services
from labgpu.accounts.backends import password_login_enabled
from labgpu.accounts.emails import email_is_verified
from labgpu.accounts.login_limits import login_with_limits
from labgpu.accounts.models import ApiToken, Lab, Membership, SshKey
from labgpu.accounts.serializers import (
    ApiTokenCreatedSerializer,
    ApiTokenSerializer,
    EmailChangeSerializer,
    EmailVerifySerializer,
    LabCreateSerializer,
    LabSerializer,
    LabUpdateSerializer,
    LoginSerializer,
    MembershipSerializer,
    MembershipUpdateSerializer,
    MeSerializer,
    SshKeySerializer,
)
from labgpu.accounts.sessions import LOGOUT_REDIRECT_SESSION_KEY
from labgpu.core.errors import NotPermitted


@method_decorator(ensure_csrf_cookie, name="get")
class CsrfView(APIView):
    """Sets the `csrftoken` cookie the SPA echoes in `X-CSRFToken`."""

    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(responses=inline_serializer("CsrfOk", {"detail": serializers.CharField()}))
    def get(self, request: Request) -> Response:
        return Response({"detail": "CSRF cookie set."})


@method_decorator(csrf_protect, name="dispatch")
class LoginView(APIView):
    """Session login for the SPA. CSRF-checked even though anonymous (prevents login CSRF)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []  # login_with_limits applies the login limits, also for /admin/

    @extend_schema(request=LoginSerializer, responses=MeSerializer)
    def post(self, request: Request) -> Response:
        if not password_login_enabled():
            raise NotPermitted(
                _("Password sign-in is turned off here: sign in with single sign-on."),
                code="password_login_disabled",
            )
        data = LoginSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = login_with_limits(request=request._request, **data.validated_data)
        login(request, user)
        return Response(MeSerializer(selectors.user_with_labs(user)).data)


class LogoutView(APIView):
    """Ends the session. `redirect_url`, when set, is the identity provider's end-session page
    (RP-initiated logout) where the browser goes next; otherwise the SPA shows its login page."""

    @extend_schema(
        request=None,
        responses=inline_serializer(
            "LogoutResult", {"redirect_url": serializers.CharField(allow_null=True)}
        ),
    )
    def post(self, request: Request) -> Response:
        redirect_url = request.session.get(LOGOUT_REDIRECT_SESSION_KEY)
        logout(request)
        return Response({"redirect_url": redirect_url})


class EmailVerificationRateThrottle(SimpleRateThrottle):
    """Verification links one person may have mailed (LABGPU_THROTTLE_EMAIL_VERIFY): each goes
    to an address they typed, which may be a stranger's. Counts only requests that send one."""

    scope = "email_verify"

    def allow_request(self, request: Request, view: APIView) -> bool:
        if not _sends_verification(request):
            return True
        return super().allow_request(request, view)

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


def _sends_verification(request: Request) -> bool:
    if request.method == "POST":
        return True
    email = request.data.get("email") if isinstance(request.data, dict) else None
    user = request.user
    return (
        isinstance(email, str)
        and bool(email.strip())
        and (email.strip().casefold() != user.email.casefold() or not email_is_verified(user))
    )


class MeView(APIView):
    def get_throttles(self) -> list:
        return [*super().get_throttles(), EmailVerificationRateThrottle()]

    @extend_schema(responses=MeSerializer)
    def get(self, request: Request) -> Response:
        return Response(MeSerializer(selectors.user_with_labs(request.user)).data)

    @extend_schema(request=MeSerializer, responses=MeSerializer)
    def patch(self, request: Request) -> Response:
        user = selectors.user_with_labs(request.user)
        serializer = MeSerializer(user, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        # A new address counts only once proved: it waits, and the old one stays in effect.
        email = serializer.validated_data.pop("email", None)
        serializer.save()
        if email is not None and (
            email.strip().casefold() != user.email.casefold() or not email_is_verified(user)
        ):
            emails.email_change_request(user=user, email=email)
        return Response(MeSerializer(user).data)


class MeEmailView(APIView):
    """Mail a verification link to an address (a new one, or the one in effect, unproved)."""

    def get_throttles(self) -> list:
        return [*super().get_throttles(), EmailVerificationRateThrottle()]

    @extend_schema(request=EmailChangeSerializer, responses=MeSerializer)
    def post(self, request: Request) -> Response:
        data = EmailChangeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = selectors.user_with_labs(request.user)
        emails.email_change_request(user=user, email=data.validated_data["email"])
        return Response(MeSerializer(user).data)


class EmailVerifyView(APIView):
    """Open a verification link (the SPA's /verify-email/lgv_… page posts its secret here, in
    the body, so it stays out of access logs). The link is the credential: no session needed."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        request=EmailVerifySerializer,
        responses=inline_serializer("EmailVerified", {"email": serializers.EmailField()}),
    )
    def post(self, request: Request) -> Response:
        data = EmailVerifySerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = emails.email_verify(raw=data.validated_data["token"])
        return Response({"email": user.email})


class SshKeyViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    queryset = SshKey.objects.none()
    serializer_class = SshKeySerializer
    pagination_class = None

    def get_queryset(self) -> QuerySet[SshKey]:
        return SshKey.objects.filter(user=self.request.user).order_by("created_at")

    def perform_create(self, serializer: SshKeySerializer) -> None:
        serializer.instance = services.ssh_key_add(
            user=self.request.user, **serializer.validated_data
        )


class ApiTokenViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Personal API tokens. The secret is returned once, by create; revoke with DELETE."""

    queryset = ApiToken.objects.none()
    serializer_class = ApiTokenSerializer
    pagination_class = None

    def get_queryset(self) -> QuerySet[ApiToken]:
        return ApiToken.objects.filter(user=self.request.user).order_by("-created_at")

    def check_permissions(self, request: Request) -> None:
        super().check_permissions(request)
        # A token must not mint or revoke tokens: a leaked one could otherwise entrench itself.
        if isinstance(request.auth, ApiToken) and request.method not in ("GET", "HEAD", "OPTIONS"):
            raise NotPermitted(
                _("Manage tokens from a signed-in session."), code="session_required"
            )

    @extend_schema(request=ApiTokenSerializer, responses={201: ApiTokenCreatedSerializer})
    def create(self, request: Request) -> Response:
        serializer = ApiTokenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        token, raw = services.token_create(user=request.user, **serializer.validated_data)
        body = ApiTokenCreatedSerializer(token).data
        body["token"] = raw
        return Response(body, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: ApiToken) -> None:
        services.token_revoke(token=instance)


class LabViewSet(mixins.CreateModelMixin, mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Labs I belong to (site admins: every lab). Site admins create, rename and archive labs."""

    queryset = Lab.objects.none()
    serializer_class = LabSerializer
    http_method_names = ["get", "post", "patch", "head", "options"]

    def get_queryset(self) -> QuerySet[Lab]:
        return selectors.labs_visible_to(self.request.user).order_by("name")

    def get_serializer_context(self) -> dict:
        context = super().get_serializer_context()
        context["my_roles"] = dict(
            Membership.objects.filter(user=self.request.user).values_list("lab_id", "role")
        )
        return context

    @extend_schema(request=LabCreateSerializer, responses={201: LabSerializer})
    def create(self, request: Request) -> Response:
        services.require_site_admin(actor=request.user)  # before reading the body
        body = LabCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        lab = services.lab_create(actor=request.user, **body.validated_data)
        return Response(self.get_serializer(lab).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=LabUpdateSerializer, responses=LabSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        lab = self.get_object()
        services.require_site_admin(actor=request.user)
        body = LabUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        lab = services.lab_update(actor=request.user, lab=lab, **body.validated_data)
        return Response(self.get_serializer(lab).data)


class LabMemberViewSet(viewsets.ModelViewSet):
    """Members of one lab. Site admins add members; lab admins change their roles and limits
    and remove them."""

    queryset = Membership.objects.none()
    serializer_class = MembershipSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_lab(self) -> Lab:
        return get_object_or_404(
            selectors.labs_visible_to(self.request.user), pk=self.kwargs["lab_pk"]
        )

    def get_queryset(self) -> QuerySet[Membership]:
        if getattr(self, "swagger_fake_view", False):
            return Membership.objects.none()
        return self.get_lab().memberships.select_related("user").order_by("user__username")

    def get_serializer_class(self) -> type:
        return (
            MembershipUpdateSerializer if self.action == "partial_update" else MembershipSerializer
        )

    def create(self, request: Request, lab_pk: str) -> Response:
        lab = self.get_lab()  # other labs are 404 whatever the body says
        services.require_site_admin_to_add(actor=request.user)  # before reading the body
        serializer = MembershipSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        membership = services.membership_add(
            actor=request.user, lab=lab, **serializer.validated_data
        )
        return Response(MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=MembershipUpdateSerializer, responses=MembershipSerializer)
    def partial_update(self, request: Request, lab_pk: str, pk: str) -> Response:
        serializer = MembershipUpdateSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        membership = services.membership_update(
            actor=request.user, membership=self.get_object(), **serializer.validated_data
        )
        return Response(MembershipSerializer(membership).data)

    def destroy(self, request: Request, lab_pk: str, pk: str) -> Response:
        services.membership_remove(actor=request.user, membership=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

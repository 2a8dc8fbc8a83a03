from django.conf import settings
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labgpu.api.permissions import SITE_ADMIN
from labgpu.api.throttling import LoginRateThrottle
from labgpu.core.errors import NotFound
from labgpu.directory import services
from labgpu.directory.ldap_client import ldap_configured
from labgpu.directory.models import DirectoryAccount
from labgpu.directory.serializers import (
    IdentityLinkRefSerializer,
    IdentityLinkSerializer,
    LdapLinkSerializer,
    LinkedIdentitySerializer,
    MyIdentitiesSerializer,
)
from labgpu.sso import linking
from labgpu.sso.models import IdentityLink, OidcIdentity


def _identities(user) -> list[dict]:  # type: ignore[no-untyped-def]
    rows = [
        {
            "kind": "oidc",
            "provider": identity.issuer,
            "identifier": identity.subject,
            "link_method": identity.link_method,
            "created_at": identity.created_at,
        }
        for identity in OidcIdentity.objects.filter(user=user).order_by("pk")
    ]
    account = DirectoryAccount.objects.filter(user=user).first()
    if account is not None:
        rows.append(
            {
                "kind": "ldap",
                "provider": account.directory,
                "identifier": account.dn,
                "link_method": account.link_method,
                "created_at": account.created_at,
            }
        )
    return rows


class MyIdentitiesView(APIView):
    """The external identities bound to my account, and how to link one (invariant I-10: the
    person proves both sides; nothing is linked by name)."""

    @extend_schema(responses=MyIdentitiesSerializer)
    def get(self, request: Request) -> Response:
        user = request.user
        linked_here = OidcIdentity.objects.filter(
            user=user, issuer=settings.LABGPU_OIDC_ISSUER
        ).exists()
        link_url = None
        if settings.LABGPU_OIDC_ENABLED and not linked_here:
            link_url = f"{reverse('oidc_authentication_init')}?link=1"
        return Response(
            MyIdentitiesSerializer(
                {
                    "identities": _identities(user),
                    "oidc_link_url": link_url,
                    "ldap_link": ldap_configured()
                    and not DirectoryAccount.objects.filter(user=user).exists(),
                }
            ).data
        )


class LdapLinkView(APIView):
    """Link my account to my directory entry by signing in to the directory here (rule a of
    I-10). Limited like a login, per client address."""

    throttle_classes = [LoginRateThrottle]

    @extend_schema(request=LdapLinkSerializer, responses={201: LinkedIdentitySerializer})
    def post(self, request: Request) -> Response:
        serializer = LdapLinkSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        account = services.directory_link_by_user(user=request.user, **serializer.validated_data)
        return Response(
            LinkedIdentitySerializer(
                {
                    "kind": "ldap",
                    "provider": account.directory,
                    "identifier": account.dn,
                    "link_method": account.link_method,
                    "created_at": account.created_at,
                }
            ).data,
            status=status.HTTP_201_CREATED,
        )


def _link_row(kind: str, link: IdentityLink) -> dict:
    is_oidc = isinstance(link, OidcIdentity)
    return {
        "kind": kind,
        "id": link.pk,
        "user": link.user.username,
        "is_site_admin": link.user.is_site_admin,
        "provider": link.issuer if is_oidc else link.directory,
        "identifier": link.subject if is_oidc else link.dn,
        "link_method": link.link_method,
        "created_at": link.created_at,
        "confirmed_at": link.confirmed_at,
    }


_LINK_MODELS = {"oidc": OidcIdentity, "ldap": DirectoryAccount}


class IdentityLinkReviewView(APIView):
    """Links made by username before issue 22, awaiting a site admin's review (I-10)."""

    permission_classes = SITE_ADMIN

    @extend_schema(responses=IdentityLinkSerializer(many=True))
    def get(self, request: Request) -> Response:
        rows = [
            _link_row(kind, link)
            for kind, model in _LINK_MODELS.items()
            for link in model.objects.select_related("user")
            .filter(link_method=IdentityLink.Method.USERNAME, confirmed_at__isnull=True)
            .order_by("pk")
        ]
        return Response(IdentityLinkSerializer(rows, many=True).data)


def _link(request: Request) -> tuple[str, IdentityLink]:
    serializer = IdentityLinkRefSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    kind = serializer.validated_data["kind"]
    link = (
        _LINK_MODELS[kind]
        .objects.select_related("user")
        .filter(pk=serializer.validated_data["id"])
        .first()
    )
    if link is None:
        raise NotFound(_("No such identity link."), code="does_not_exist")
    return kind, link


class IdentityLinkConfirmView(APIView):
    """A site admin vouches that a link joins the right person (audited)."""

    permission_classes = SITE_ADMIN

    @extend_schema(request=IdentityLinkRefSerializer, responses=IdentityLinkSerializer)
    def post(self, request: Request) -> Response:
        kind, link = _link(request)
        linking.identity_link_confirm(actor=request.user, link=link)
        return Response(IdentityLinkSerializer(_link_row(kind, link)).data)


class IdentityLinkCutView(APIView):
    """A site admin cuts a link: the identity's next sign-in makes a new account (audited)."""

    permission_classes = SITE_ADMIN

    @extend_schema(request=IdentityLinkRefSerializer, responses={204: None})
    def post(self, request: Request) -> Response:
        _, link = _link(request)
        linking.identity_link_cut(actor=request.user, link=link)
        return Response(status=status.HTTP_204_NO_CONTENT)

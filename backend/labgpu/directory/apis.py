from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labgpu.api.throttling import LoginRateThrottle
from labgpu.directory import services
from labgpu.directory.ldap_client import ldap_configured
from labgpu.directory.models import DirectoryAccount
from labgpu.directory.serializers import (
    LdapLinkSerializer,
    LinkedIdentitySerializer,
    MyIdentitiesSerializer,
)
from labgpu.sso.models import OidcIdentity


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

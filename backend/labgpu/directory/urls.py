from django.urls import path

from labgpu.directory import apis

urlpatterns = [
    path("me/identities/", apis.MyIdentitiesView.as_view(), name="me-identities"),
    path("me/identities/ldap/", apis.LdapLinkView.as_view(), name="me-identities-ldap"),
    path("sso/identity-links/", apis.IdentityLinkReviewView.as_view(), name="identity-links"),
    path(
        "sso/identity-links/confirm/",
        apis.IdentityLinkConfirmView.as_view(),
        name="identity-links-confirm",
    ),
    path("sso/identity-links/cut/", apis.IdentityLinkCutView.as_view(), name="identity-links-cut"),
]

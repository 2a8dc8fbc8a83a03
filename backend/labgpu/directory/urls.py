from django.urls import path

from labgpu.directory import apis

urlpatterns = [
    path("me/identities/", apis.MyIdentitiesView.as_view(), name="me-identities"),
    path("me/identities/ldap/", apis.LdapLinkView.as_view(), name="me-identities-ldap"),
]

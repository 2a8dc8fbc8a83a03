from django.urls import path

from labgpu.sso.oidc import OidcCallbackView, OidcLoginView

urlpatterns = [
    path("login/", OidcLoginView.as_view(), name="oidc_authentication_init"),
    path("callback/", OidcCallbackView.as_view(), name="oidc_authentication_callback"),
]

from django.urls import path
from rest_framework.routers import SimpleRouter

from labgpu.accounts import apis

router = SimpleRouter()
router.register("me/ssh-keys", apis.SshKeyViewSet, basename="ssh-key")
router.register("tokens", apis.ApiTokenViewSet, basename="token")
router.register("labs", apis.LabViewSet, basename="lab")
router.register(r"labs/(?P<lab_pk>[0-9]+)/members", apis.LabMemberViewSet, basename="lab-member")

urlpatterns = [
    path("auth/csrf/", apis.CsrfView.as_view(), name="auth-csrf"),
    path("auth/login/", apis.LoginView.as_view(), name="auth-login"),
    path("auth/logout/", apis.LogoutView.as_view(), name="auth-logout"),
    path("me/", apis.MeView.as_view(), name="me"),
    path("me/email/", apis.MeEmailView.as_view(), name="me-email"),
    path("email/verify/", apis.EmailVerifyView.as_view(), name="email-verify"),
    *router.urls,
]

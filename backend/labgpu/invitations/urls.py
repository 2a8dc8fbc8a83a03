from django.urls import path
from rest_framework.routers import SimpleRouter

from labgpu.invitations import apis

router = SimpleRouter()
router.register(
    r"labs/(?P<lab_pk>[0-9]+)/invitations", apis.LabInvitationViewSet, basename="lab-invitation"
)

urlpatterns = [
    path("invitations/preview/", apis.InvitationPreviewView.as_view(), name="invitation-preview"),
    path("invitations/accept/", apis.InvitationAcceptView.as_view(), name="invitation-accept"),
    path("invitations/sign-up/", apis.InvitationSignUpView.as_view(), name="invitation-sign-up"),
    *router.urls,
]

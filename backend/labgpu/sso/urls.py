from django.urls import path
from rest_framework.routers import SimpleRouter

from labgpu.sso import apis

router = SimpleRouter()
router.register("sso/group-mappings", apis.GroupMappingViewSet, basename="group-mapping")

urlpatterns = [
    path("auth/providers/", apis.AuthProvidersView.as_view(), name="auth-providers"),
    *router.urls,
]

from rest_framework.routers import SimpleRouter

from labgpu.audit import apis

router = SimpleRouter()
router.register("audit", apis.AuditEventViewSet, basename="audit")

urlpatterns = router.urls

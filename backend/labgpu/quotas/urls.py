from rest_framework.routers import SimpleRouter

from labgpu.quotas import apis

router = SimpleRouter()
router.register("quotas", apis.QuotaViewSet, basename="quota")
router.register("quota-requests", apis.QuotaRequestViewSet, basename="quota-request")

urlpatterns = router.urls

from rest_framework.routers import SimpleRouter

from labgpu.catalog import apis

router = SimpleRouter()
router.register("provider-accounts", apis.ProviderAccountViewSet, basename="provider-account")
router.register("instance-types", apis.InstanceTypeViewSet, basename="instance-type")
router.register("pools", apis.NodePoolViewSet, basename="pool")

urlpatterns = router.urls

from rest_framework.routers import SimpleRouter

from labgpu.provisioning import apis

router = SimpleRouter()
router.register("nodes", apis.NodeViewSet, basename="node")

urlpatterns = router.urls

from rest_framework.routers import SimpleRouter

from labgpu.waitlist import apis

router = SimpleRouter()
router.register("waitlist", apis.WaitlistViewSet, basename="waitlist")

urlpatterns = router.urls

from rest_framework.routers import SimpleRouter

from labgpu.chat import apis

router = SimpleRouter()
router.register("chat-channels", apis.ChatChannelViewSet, basename="chat-channel")

urlpatterns = router.urls

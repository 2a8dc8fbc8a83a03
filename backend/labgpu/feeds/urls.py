from django.urls import re_path
from rest_framework.routers import SimpleRouter

from labgpu.feeds import apis

router = SimpleRouter()
router.register("feeds", apis.CalendarFeedViewSet, basename="feed")

urlpatterns = [
    re_path(
        r"^feeds/(?P<token>lgf_[A-Za-z0-9_-]+)\.ics$",
        apis.CalendarFeedIcsView.as_view(),
        name="feed-ics",
    ),
    *router.urls,
]
